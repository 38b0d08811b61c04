"""Other tools' output as mpiscope runs (`mpiscope import`, docs/import.md): one parser per tool
(osu, imb) returning typed `Point` records through common.py, and files.py, which detects the
tool, parses and writes each point as it is made into one run. Names are loaded from their
module on first use."""
from mpiscope.util.lazy import facade

__all__ = ["FORMATS", "ImportFailed", "ImportedRun", "detect", "import_files", "import_run", "parse_file"]
__getattr__, __dir__ = facade(__name__, {
    "files": ("FORMATS", "ImportedRun", "detect", "import_files", "import_run", "parse_file", "MAX_IMPORT_BYTES",
              "TOOL_NAMES"),
    "common": ("ImportFailed",),
})
