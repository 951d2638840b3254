"""Starts and stops the server under test.

The server is RHKV_TEST_SERVER, else meson's RHKV_TEST_SERVER_DEFAULT
(tests/server/meson.build), else the build's rhkvd found next to this
source tree; `memcached` means memcached (-u root -U 0). It listens on a
free 127.0.0.1 port and is stopped by its PID; whatever still runs when
this process exits (a failure, SIGTERM from meson's timeout) is killed.
(Not PR_SET_PDEATHSIG: that fires when the starting thread ends, and the
global thread restarts the server.) Its stderr goes to a log file, printed on failure.
"""

import atexit
import os
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def server_path():
    p = os.environ.get('RHKV_TEST_SERVER') or \
        os.environ.get('RHKV_TEST_SERVER_DEFAULT')
    if p:
        return p
    for b in ('build', 'build-asan'):
        c = os.path.join(HERE, '..', '..', b, 'server', 'rhkvd')
        if os.path.exists(c):
            return os.path.normpath(c)
    return 'memcached'


def is_memcached(path):
    return os.path.basename(path) == 'memcached'


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


LIVE = set()  # started and not yet stopped: killed at exit


@atexit.register
def _kill_all():
    for p in list(LIVE):
        p.kill()
        p.wait()


class Server:
    """One server process; `args` are its options after -p and -l."""

    def __init__(self, path, args, log):
        self.path, self.args, self.logpath = path, list(args), log
        self.proc = None
        self.port = None

    def start(self):
        for _ in range(5):
            self.port = free_port()
            cmd = [self.path, '-p', str(self.port), '-l', '127.0.0.1']
            if is_memcached(self.path):
                cmd[1:1] = ['-u', 'root', '-U', '0']
            log = open(self.logpath, 'ab')
            log.write(b'== %s\n' % ' '.join(cmd + self.args).encode())
            log.flush()
            self.proc = subprocess.Popen(cmd + self.args, stdout=log,
                                         stderr=log)
            LIVE.add(self.proc)
            log.close()
            deadline = time.time() + 60
            while time.time() < deadline and self.proc.poll() is None:
                if self._ready():
                    return
                time.sleep(0.05)
            self.kill()
        raise RuntimeError('%s did not start; log %s' % (self.path,
                                                         self.logpath))

    def _ready(self):
        try:
            s = socket.create_connection(('127.0.0.1', self.port),
                                         timeout=2)
            s.sendall(b'version\r\n')
            ok = s.recv(100).startswith(b'VERSION ')
            s.close()
            return ok
        except OSError:
            return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def how_gone(self):
        """'runs', or how the process ended (a crash: its signal)."""
        if self.proc is None:
            return 'stopped'
        rc = self.proc.poll()
        if rc is None:
            return 'runs'
        if rc < 0:
            return 'died of signal %d (%s)' % (-rc, signal.Signals(-rc).name)
        return 'exited %d' % rc

    def stop(self):
        """SIGTERM; returns the exit status (SIGKILL after 60 s: -9)."""
        if self.proc is None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        LIVE.discard(self.proc)
        self.proc = None
        return rc

    def kill(self):
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        LIVE.discard(self.proc)
        self.proc = None

    def log_tail(self, n=30):
        try:
            with open(self.logpath, 'rb') as f:
                lines = f.read().decode(errors='replace').splitlines()
            return '\n'.join(lines[-n:])
        except OSError:
            return ''
