"""The records of a run: the typed model of the engine's JSON Lines schema 1 (model), the one
reader (reader) and the tidy table built from them (table, which needs pandas)."""
from mpiscope.records.model import (INTER, INTRA, MIXED, SCHEMA_VERSION, AtPoint, Check, Context, End, Failure,
                                    Pair, Point, PointKey, RankPlace, Rate, Record, RecordError, Skip, Stats,
                                    Timeout, parse_record, point_line, to_json, with_tag)
from mpiscope.records.model import Imported, PointLines, json_cells
from mpiscope.records.reader import RecordFile, parse_line, read_records

__all__ = ["INTER", "INTRA", "MIXED", "SCHEMA_VERSION", "AtPoint", "Check", "Context", "End", "Failure", "Pair",
           "Point", "PointKey", "RankPlace", "Rate", "Record", "RecordError", "RecordFile", "Skip", "Stats",
           "Timeout", "parse_line", "parse_record", "point_line", "read_records", "to_json", "with_tag"]
__all__ += ["Imported", "PointLines", "json_cells"]
