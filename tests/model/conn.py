"""A buffered TCP connection with a deadline, shared by the clients.

A connection appends what it sends to a transcript (text and meta lines
as they are, binary frames decoded, with their header in hex), so that a
shrunk failure prints the exact commands.
"""

import socket

TIMEOUT = 60.0  # a sanitizer server under load can be slow, never this slow


class ConnError(Exception):
    """The connection failed or closed (a restart, a crash)."""


class Conn:
    def __init__(self, port, label, transcript):
        self.label, self.transcript = label, transcript
        try:
            self.s = socket.create_connection(('127.0.0.1', port),
                                              timeout=TIMEOUT)
        except OSError as e:
            raise ConnError('connect: %s' % e)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def send(self, data, show=None):
        if self.transcript is not None:
            self.transcript.append((self.label,
                                    show if show is not None else data))
        try:
            self.s.sendall(data)
        except OSError as e:
            raise ConnError('send: %s' % e)

    def _fill(self):
        try:
            d = self.s.recv(1 << 20)
        except OSError as e:
            raise ConnError('recv: %s' % e)
        if not d:
            raise ConnError('closed by the server')
        self.buf += d

    def line(self):
        while True:
            i = self.buf.find(b'\r\n')
            if i >= 0:
                ln, self.buf = self.buf[:i], self.buf[i + 2:]
                return ln
            self._fill()

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d
