"""The server's WebSocket protocol: uvicorn's websockets (sans-I/O) implementation, whose close
frame reaches the client when the server fails a connection on a frame it refuses.

uvicorn refuses a frame as soon as its header is read: over ``--request-body-max-bytes`` (1009)
or, once whole, a text message that is not UTF-8 (1007). It then writes the close frame and closes
the socket at once, while the rest of the frame is still arriving or waiting unread. A socket
closed with unread data answers with a reset, and a reset can overtake the close frame: the
client sees an abrupt end (1006) instead of the code. A runner shrinks a result that got 1009 but
resends one whose connection merely ended, so the code must arrive.

Here the server writes the close frame, ends its side of the connection (FIN), and reads on,
discarding, until the client closes its side; at most ``close_timeout`` seconds.

The text messages an application sends in one turn of the event loop go out in one write. A
socket's write is most of what answering a message costs (benchmarks/RESULTS.md,
``job_upkeep``), and the messages a runner sends in one burst are read together and answered in
the same turn: one write answers them all. The frames, and their order before any other frame
(a close, a pong), stay as they were; each merely waits for the end of the turn.

Most of what a runner sends is a heartbeat, alone in its read: one small text frame. An app may
answer such a message in the protocol itself (the scope extension ``ANSWER_AT_ONCE``): the frame
is unmasked and handed to the app's function, which returns its reply or None. With a reply,
that is written in the same turn, and the message never reaches the app's ``receive`` (nor
websockets' frame parser: the frame read is whole, the parser holds nothing, no fragmented
message is under way); with None, the read takes uvicorn's way. Going through the parser, the
queue to the app and a task's wake-up costs more than the rest of a heartbeat's handling
(benchmarks/RESULTS.md, ``many_runners``).

uvicorn pings each connection every ``ws_ping_interval`` seconds; here only one that sent
nothing since the last ping was due: a frame just read says as much about the peer as a pong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.protocol import State

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets built without its C extension
    from websockets.utils import apply_mask

from benchrunner.server.channel.runner_session import ANSWER_AT_ONCE, AnswerAtOnce

if TYPE_CHECKING:
    from uvicorn._types import ASGISendEvent
    from websockets.frames import Frame
    from websockets.http11 import Request

_SMALL = 125
"""The longest payload whose frame length fits the header's first length field."""


class LingeringCloseProtocol(WebSocketsSansIOProtocol):
    """``uvicorn.Config(ws=LingeringCloseProtocol)``."""

    _failed = False
    _flush_due = False
    """Whether a write of the frames sent this turn is scheduled (``_flush``)."""
    _answer: AnswerAtOnce | None = None
    _heard = False
    """Whether a frame was read since the last keepalive ping was due."""
    _last_reply: bytes | None = None
    _last_frame = b""
    """The frame of ``_last_reply``, the last reply answered at once."""

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        if self.response.status_code == 101:  # the scope exists; the app has not yet run
            self.scope["extensions"][ANSWER_AT_ONCE] = {"install": self._install}

    def _install(self, answer: AnswerAtOnce | None) -> None:
        self._answer = answer

    async def send(self, message: ASGISendEvent) -> None:
        text = message.get("text") if message["type"] == "websocket.send" else None
        if (
            not isinstance(text, str)
            or not self.handshake_complete
            or self.close_sent
            or self.disconnected
            or not self.writable.is_set()
        ):
            await super().send(message)  # uvicorn's own way, and its checks and errors
            return
        try:
            self.conn.send_text(text.encode())
        except InvalidState:
            raise ClientDisconnected() from None
        if not self._flush_due:
            self._flush_due = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write the frames sent this turn. Whatever writes a frame of its own first (a close,
        a pong) takes them with it, ahead of its own: ``data_to_send`` keeps their order."""
        self._flush_due = False
        output = self.conn.data_to_send()
        if output and not self.transport.is_closing():
            self.transport.write(b"".join(output))

    def data_received(self, data: bytes) -> None:
        if self._failed:
            return  # the rest of the refused frame, or the client's reply to the close
        self._heard = True
        if self._answer is not None and self._answered_at_once(data, self._answer):
            return
        super().data_received(data)

    def _answered_at_once(self, data: bytes, answer: AnswerAtOnce) -> bool:
        """Whether ``data``, one whole small text frame and nothing else, was answered here."""
        size = len(data) - 6  # the payload's, after 2 bytes of header and 4 of mask
        # FIN, no reserved bits, text; masked, as a client's frame must be, and the length
        # in the first field.
        if not 0 <= size <= _SMALL or data[0] != 0x81 or data[1] != 0x80 | size:
            return False
        conn = self.conn
        if (
            conn.state is not State.OPEN
            or conn.current_size is not None  # a fragmented message under way
            or conn.reader.buffer  # part of a frame read before
            or conn.extensions
            or (conn.max_message_size is not None and size > conn.max_message_size)
            or self.close_sent
            or not self.writable.is_set()  # the client reads slowly: its replies wait
            or not self.queue.empty()  # messages ahead of this one, still to be received
        ):
            return False
        reply = answer(apply_mask(data[6:], data[2:6]))
        if reply is None:
            return False
        if reply is self._last_reply:  # a job's heartbeats are all answered with one ack
            frame = self._last_frame
        elif len(reply) <= _SMALL:
            frame = bytes((0x81, len(reply))) + reply
            self._last_reply, self._last_frame = reply, frame
        else:
            conn.send_text(reply)
            frame = b""
        pending = conn.data_to_send()
        if pending:  # after what was sent before (``_flush`` finds it gone), in one write
            frame = b"".join(pending) + frame
        if frame and not self.transport.is_closing():
            self.transport.write(frame)
        return True

    def send_keepalive_ping(self) -> None:
        if self._heard and self.ping_interval is not None:
            self._heard = False
            self.ping_timer = self.loop.call_later(self.ping_interval, self.send_keepalive_ping)
            return
        super().send_keepalive_ping()

    def handle_pong(self, event: Frame) -> None:
        super().handle_pong(event)
        self._heard = False  # the answer to the ping: no sign of life that spares the next one

    def handle_parser_exception(self) -> None:
        if self._failed:
            return
        self._failed = True
        close = self.conn.close_sent
        code, reason = (close.code, close.reason) if close is not None else (1006, "")
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        if not self.transport.can_write_eof():  # TLS: no half-close
            self.transport.close()
            return
        self.transport.write_eof()
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        # The client's EOF closes the transport (``eof_received`` returns None); this bounds a
        # client that never closes.
        self.close_timer = self.loop.call_later(self.close_timeout, self.transport.close)
