"""The one launch-level layer (docs/statistics.md): grouping launches into points (`points`),
the robust estimate and its interval (`launches`), evidence flags (`evidence`), what disturbed a
launch (`disturbance`), the drift from earlier runs (`history`), verdicts (`verdict`,
`compare`), every constant with its evidence (`policy`), and the `Results` of a set of runs that
every reporter renders (`view`). Nothing outside this package re-derives launch-level figures."""
