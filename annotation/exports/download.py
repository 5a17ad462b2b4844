"""An export as one download: what the Data page offers for every format of
:data:`~annotation.exports.registry.FORMATS`, the folder formats (BEIR, TREC)
as a ``.zip`` of the folder, every file with the extension its readers expect.

The format's own function writes it (the same one ``python -m annotation export``
calls), into a temporary folder that is removed afterwards; the summary line
names the download instead of the temporary path.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.exports.registry import export_format
from annotation.store import Store

__all__ = ["Download", "export_download"]


@dataclass(frozen=True)
class Download:
    filename: str  # with its extension: golden.yaml, qrels.txt, beir.zip, ...
    data: bytes
    summary: str  # the format's own summary line, naming ``filename``
    mime: str


MIMES = {
    ".yaml": "application/yaml",
    ".csv": "text/csv",
    ".json": "application/json",
    ".zip": "application/zip",
}


def export_download(store: Store, name: str, **options: Any) -> Download:
    """Format ``name`` of the store's labels as one file to download (a folder format zipped,
    its files under one top folder named like the format). ``options`` as
    :meth:`ExportFormat.export` takes them. Raises what the format raises (NothingToExport,
    StoreError, FormatError): nothing is offered then."""
    fmt = export_format(name)
    with tempfile.TemporaryDirectory(prefix="denominator-export-") as tmp:
        path = Path(tmp) / fmt.default_name
        summary = fmt.export(store, path, **options)
        if fmt.writes == "folder":
            filename = f"{fmt.default_name}.zip"
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for file in sorted(p for p in path.rglob("*") if p.is_file()):
                    archive.write(file, Path(fmt.default_name) / file.relative_to(path))
            data = buffer.getvalue()
        else:
            filename = fmt.default_name
            data = path.read_bytes()
    summary = summary.replace(str(path), filename)
    return Download(filename, data, summary, MIMES.get(Path(filename).suffix, "text/plain"))
