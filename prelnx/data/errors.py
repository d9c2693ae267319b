"""The one exception of data preparation: bad or missing input, with a message that says what to do."""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data, a missing file or download, an unwritable output folder: one clear message."""
