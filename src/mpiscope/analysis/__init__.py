"""Statistics, model fits, protocol-switch detection and predictions on typed records, one module
each (hockney, switches, loggp, predict, validate, hw, clock, model, ...), imported by name:
`from mpiscope.analysis.hockney import fit_hockney`. Input everywhere: `records.Point`s, or
anything `records.measured.Measured`; selection and weights in measured.py."""
