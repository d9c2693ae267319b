"""Downloads against a local HTTP server on loopback (and file:// URLs): progress, resume with Range,
size and checksum verification, and the no-network message."""

from __future__ import annotations

import hashlib
import http.server
import io
import socket
import tarfile
import threading
from pathlib import Path

import pytest

from prelnx.data import iwslt14
from prelnx.data.sources import Download, fetch, locate
from prelnx.data.textio import DataError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves the server's `files`; honours `Range: bytes=N-`; `truncate` sends only that many bytes once."""

    def do_GET(self) -> None:  # noqa: N802
        server = self.server
        server.ranges.append(self.headers.get("Range"))
        data = server.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].rstrip("-"))
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if server.truncate is not None:
            body, server.truncate = body[: server.truncate], None  # then the connection drops
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.files, httpd.ranges, httpd.truncate = {"data.bin": PAYLOAD}, [], None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_download_verifies_checksum(server, tmp_path):
    path = fetch(Download(f"{server.url}/data.bin", "data.bin", sha256=_sha(PAYLOAD)), tmp_path, hint="h")
    assert path.read_bytes() == PAYLOAD and server.ranges == [None]
    # present and verified: not fetched again
    assert fetch(Download(f"{server.url}/data.bin", "data.bin", sha256=_sha(PAYLOAD)), tmp_path, hint="h") == path
    assert server.ranges == [None]


def test_a_partial_download_resumes_with_range(server, tmp_path):
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:300_000])
    path = fetch(Download(f"{server.url}/data.bin", "data.bin", sha256=_sha(PAYLOAD)), tmp_path, hint="h")
    assert server.ranges == ["bytes=300000-"]
    assert path.read_bytes() == PAYLOAD and not (tmp_path / "data.bin.part").exists()


def test_a_broken_connection_keeps_the_part_and_the_next_run_resumes(server, tmp_path):
    server.truncate = 100_000
    download = Download(f"{server.url}/data.bin", "data.bin", sha256=_sha(PAYLOAD))
    with pytest.raises(DataError, match="run the same command again to resume"):
        fetch(download, tmp_path, hint="h")
    assert (tmp_path / "data.bin.part").stat().st_size == 100_000 and not (tmp_path / "data.bin").exists()
    assert fetch(download, tmp_path, hint="h").read_bytes() == PAYLOAD
    assert server.ranges == [None, "bytes=100000-"]


def test_a_checksum_mismatch_is_an_error_and_leaves_nothing(server, tmp_path):
    with pytest.raises(DataError, match="does not match the expected"):
        fetch(Download(f"{server.url}/data.bin", "data.bin", sha256="0" * 64), tmp_path, hint="h")
    assert list(tmp_path.iterdir()) == []


def test_a_size_mismatch_is_an_error(server, tmp_path):
    with pytest.raises(DataError, match="expected 999"):
        fetch(Download(f"{server.url}/data.bin", "data.bin", size=999), tmp_path, hint="h")
    assert list(tmp_path.iterdir()) == []


def test_file_urls_download_too_and_restart_a_part_they_cannot_resume(tmp_path):
    origin = tmp_path / "origin.bin"
    origin.write_bytes(PAYLOAD)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "copy.bin.part").write_bytes(b"stale")  # file:// ignores Range: start afresh
    path = fetch(Download(origin.as_uri(), "copy.bin", sha256=_sha(PAYLOAD)), cache, hint="h")
    assert path.read_bytes() == PAYLOAD


def test_http_errors_and_no_network_are_one_message_saying_how_to_pass_a_local_copy(server, tmp_path):
    with pytest.raises(DataError, match="HTTP 404"):
        fetch(Download(f"{server.url}/missing.tgz", "missing.tgz"), tmp_path, hint="h")
    with socket.socket() as sock:  # a port nobody listens on: connection refused, as without network
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DataError) as error:
        iwslt14.gather(f"http://127.0.0.1:{port}/de-en.tgz", tmp_path / "work")
    message = str(error.value)
    assert message.startswith(f"cannot download http://127.0.0.1:{port}/de-en.tgz")
    assert "--source /path/to/de-en.tgz" in message and "folder" in message


def test_a_source_url_is_downloaded_and_its_archive_members_found(server, tmp_path, monkeypatch):
    monkeypatch.setenv("PRELNX_DATA_HOME", str(tmp_path / "home"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in {"corpus/a/train.x": b"hello\n", "corpus/train.y": b"world\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text)
            archive.addfile(info, io.BytesIO(text))
    server.files["c.tgz"] = buffer.getvalue()
    found = locate(
        f"{server.url}/c.tgz", ["train.x", "train.y"], downloads=[], work=tmp_path / "work", hint="h", what="w"
    )
    assert Path(found.paths["train.x"]).read_text() == "hello\n"
    assert Path(found.paths["train.y"]).read_text() == "world\n"
    assert (tmp_path / "home" / "downloads" / "c.tgz").is_file()
    assert found.inputs["c.tgz"]["sha256"] == _sha(buffer.getvalue())
