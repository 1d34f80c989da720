"""JSON responses as kube-apiserver frames them, for the REST surface (`http.py`) and the admin plane
(`omectl/sim/faults/admin_http.py`)."""

from __future__ import annotations

from typing import Any, Final

import orjson
from aiohttp import HttpVersion11, hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE

from omectl.sim.apiserver.errors import APIError

JSON = "application/json"


class JSONBytesResponse(web.StreamResponse):
    """A JSON body sent with its header block written as bytes, not through aiohttp's header multidict.

    The header block is what `web.Response` would send for the same body (Content-Type, Content-Length,
    Date, Server, `Connection: close` when the connection ends, plus `extra_headers` such as Warning or
    Retry-After). Requests the shortcut does not cover (HTTP/1.0, HEAD, an application's request with
    prepare signals, a header value with a line break) go through `web.StreamResponse` unchanged.
    """

    def __init__(self, body: bytes, status: int = 200, extra_headers: dict[str, str] | None = None) -> None:
        super().__init__(status=status)
        self._json_body = body
        self._extra_headers = extra_headers

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        if self._eof_sent:
            return None
        if self._payload_writer is not None:
            return self._payload_writer
        head = self._header_block(request)
        if head is None:
            self.headers[hdrs.CONTENT_TYPE] = JSON
            self.headers[hdrs.CONTENT_LENGTH] = str(len(self._json_body))
            if self._extra_headers:
                self.headers.update(self._extra_headers)
            return await super().prepare(request)
        self._req = request
        writer = self._payload_writer = request._payload_writer
        writer.length = len(self._json_body)
        # The writer sends a buffered header block together with the body in one transport write. These are
        # private fields of aiohttp's StreamWriter (pinned at 3.14.5 in constraints.txt): recheck on upgrade;
        # tests/sim/test_fast_paths.py checks the framing on the wire.
        writer._headers_buf = head  # type: ignore[attr-defined]
        writer._headers_written = False  # type: ignore[attr-defined]
        return writer

    def _header_block(self, request: web.BaseRequest) -> bytes | None:
        if (
            type(request) is not web.BaseRequest
            or request.version != HttpVersion11
            or request.method == "HEAD"
            or self.status in (204, 304)
            or self.status < 200
        ):
            return None
        keep_alive = self._keep_alive
        if keep_alive is None:
            keep_alive = self._keep_alive = request.keep_alive
        status_line = _STATUS_LINES.get(self.status)
        if status_line is None:
            status_line = _STATUS_LINES[self.status] = f"HTTP/1.1 {self.status} {self.reason}\r\n"
        head = (
            f"{status_line}Content-Type: application/json\r\nContent-Length: {len(self._json_body)}\r\n"
            f"Date: {rfc822_formatted_time()}\r\n{_SERVER_LINE}"
        )
        if self._extra_headers:
            for key, value in self._extra_headers.items():
                if "\r" in value or "\n" in value:
                    return None
                head += f"{key}: {value}\r\n"
        if not keep_alive:
            head += "Connection: close\r\n"
        return (head + "\r\n").encode()

    async def write_eof(self, data: bytes = b"") -> None:
        if self._eof_sent:
            return
        await super().write_eof(b"" if self._must_be_empty_body else data or self._json_body)


_STATUS_LINES: dict[int, str] = {}
_SERVER_LINE: Final = f"Server: {SERVER_SOFTWARE}\r\n"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.StreamResponse:
    return JSONBytesResponse(orjson.dumps(body), status, headers)


def error_response(exc: APIError) -> web.StreamResponse:
    return json_response(exc.status(), exc.code, exc.headers)
