"""Turning stored runs into tables people read and tables programs load."""
