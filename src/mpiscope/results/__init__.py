"""The results layer: what the records of a run say, before any rendering."""
