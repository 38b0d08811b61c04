"""Statistics, model fits, protocol-switch detection and predictions on typed records.
Input everywhere: `records.Point`s, or anything `Measured` (see measured.py)."""
from .clock import Clock, detect_clock
from .hockney import HockneyFit, fit_hockney, format_hockney_table
from .hw import Hardware, format_hardware, hardware_from_records
from .loggp import LogGP, format_loggp, loggp_from_records
from .measured import Measured, Synthetic, select, sigma
from .predict import (Params, best, format_winners, mpich_default, predict,
                      prediction_table, regime_params)
from .model import format_model, model_records
from .switches import SwitchReport, find_switches, format_switches, refine, sizes_to_refine
from .validate import format_validation, validate

__all__ = ["Clock", "detect_clock", "HockneyFit", "fit_hockney", "format_hockney_table",
           "Measured", "Synthetic", "select", "sigma", "Params", "best", "format_winners",
           "mpich_default", "predict", "prediction_table", "SwitchReport", "find_switches",
           "format_switches", "refine", "sizes_to_refine", "format_validation", "validate",
           "format_model", "model_records", "regime_params", "Hardware", "format_hardware",
           "hardware_from_records", "LogGP", "format_loggp", "loggp_from_records"]
