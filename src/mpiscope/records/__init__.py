"""The records of a run: the typed model of the engine's JSON Lines schema 1 (model), the one
reader (reader), what the analysis reads of a measurement (measured) and of a run (run). Names
are loaded from their module on first use."""
from mpiscope.util.lazy import facade

_MODEL = ("INTER", "INTRA", "MIXED", "SCHEMA_VERSION", "AtPoint", "Check", "Context", "End", "Failure", "Pair",
          "Point", "PointKey", "RankPlace", "Rate", "Record", "RecordError", "Skip", "Stats", "Timeout",
          "parse_record", "point_line", "to_json", "with_tag", "Imported", "PointLines", "json_cells")
_READER = ("RecordFile", "parse_line", "read_records")
__all__ = [*_MODEL, *_READER]
__getattr__, __dir__ = facade(__name__, {"model": _MODEL, "reader": _READER})
