"""Services the campaign tests start on 127.0.0.1 and always stop: a one-node Slurm cluster
(Debian's slurm-wlm and munge, each daemon with its own files in a temporary folder) and an
S3-compatible server (moto's standalone server) behind a proxy that counts its requests.

A service that cannot start raises ServiceError with the reason and the daemon's log; the
tests turn that into a failure, never a skip.
"""

from __future__ import annotations

import ctypes
import http.client
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

LOCALHOST = "127.0.0.1"


class ServiceError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} not written)"


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that started it dies


def _die_with_parent() -> None:
    """In a daemon before it runs: the kernel sends it SIGTERM when the test process that started
    it dies, so a run killed from outside (SIGKILL, an outer timeout), whose fixtures never tear
    down, leaves no daemon behind. Linux only; elsewhere the fixtures' teardown alone stops them."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Daemons:
    """Processes started here, stopped in reverse order (TERM, then KILL after a grace period)."""

    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)

    def start(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        binary = shutil.which(argv[0]) or (argv[0] if Path(argv[0]).exists() else None)
        if binary is None:
            raise ServiceError(f"{argv[0]} is not installed (.ci/run installs it; apt-get install -y slurm-wlm munge)")
        stream = log.open("ab")
        proc = subprocess.Popen(
            [binary, *argv[1:]],
            stdout=stream,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        stream.close()
        self.procs.append((name, proc))
        return proc

    def check_alive(self, name: str, proc: subprocess.Popen, log: Path) -> None:
        if proc.poll() is not None:
            raise ServiceError(f"{name} exited with {proc.returncode} at start:\n{_tail(log)}")

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.procs.clear()


def _wait_for(what: str, check, timeout: float, log: Path, every: float = 0.3) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        ok, last = check()
        if ok:
            return
        time.sleep(every)
    raise ServiceError(f"{what} not ready after {timeout:.0f}s ({last}):\n{_tail(log)}")


# ---- Slurm ------------------------------------------------------------------------------

SLURM_CONF = """\
# A one-node test cluster on 127.0.0.1: no cgroups, no accounting database.
ClusterName=mrtest
SlurmctldHost={host}({addr})
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=3600
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName={host} NodeAddr={addr} CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    env: dict[str, str]

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise ServiceError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def log(self, name: str) -> str:
        return _tail(self.root / name, 60)

    def wait_for_job(self, job: str, timeout: float) -> dict[str, dict[str, str]]:
        """Wait until no task of the job is pending or running; {task id: scontrol fields}."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queued = self.run("squeue", "-h", "-j", job, "-o", "%i %T").stdout.strip()
            if not queued:
                break
            time.sleep(1)
        else:
            raise ServiceError(f"job {job} still queued after {timeout:.0f}s:\n{queued}\n{self.log('slurmctld.log')}")
        shown = self.run("scontrol", "-o", "show", "job", job).stdout
        tasks = {}
        for line in shown.splitlines():
            fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
            tasks[fields.get("ArrayTaskId", fields.get("JobId", "?"))] = fields
        return tasks


@contextmanager
def slurm_cluster(root: Path) -> Iterator[SlurmCluster]:
    """munged, slurmctld and slurmd on 127.0.0.1 with their own configuration under root."""
    for tool in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            raise ServiceError(
                f"{tool} is not installed (.ci/run installs slurm-wlm and munge; apt-get install -y slurm-wlm munge)"
            )
    if os.geteuid() != 0:
        raise ServiceError("the test Slurm cluster runs its daemons as root (as CI does)")
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    for sub in ("state", "spool", "munge"):
        (root / sub).mkdir(exist_ok=True)
        (root / sub).chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    munge_socket = root / "munge" / "munge.socket"
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(
        SLURM_CONF.format(
            host=host,
            addr=LOCALHOST,
            ctld_port=free_port(),
            slurmd_port=free_port(),
            munge_socket=munge_socket,
            root=root,
            cpus=os.cpu_count() or 1,
        )
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = Daemons()
    try:
        munge_log = root / "munge" / "munged.log"
        munged = daemons.start(
            "munged",
            [
                "/usr/sbin/munged",
                "--foreground",
                "--force",
                f"--socket={munge_socket}",
                f"--key-file={key}",
                f"--pid-file={root / 'munge' / 'munged.pid'}",
                f"--log-file={munge_log}",
                f"--seed-file={root / 'munge' / 'seed'}",
            ],
            root / "munge" / "munged.out",
        )
        _wait_for(
            "munged",
            lambda: (
                (munge_socket.exists(), "no socket yet")
                if munged.poll() is None
                else (False, f"exited {munged.returncode}")
            ),
            15,
            munge_log,
        )
        ctld = daemons.start(
            "slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(conf)], root / "slurmctld.out", env
        )
        slurmd = daemons.start(
            "slurmd", ["/usr/sbin/slurmd", "-D", "-N", host, "-f", str(conf)], root / "slurmd.out", env
        )

        def node_idle() -> tuple[bool, str]:
            for name, proc, log in (("slurmctld", ctld, "slurmctld.out"), ("slurmd", slurmd, "slurmd.out")):
                if proc.poll() is not None:
                    raise ServiceError(
                        f"{name} exited with {proc.returncode} at start:\n{_tail(root / log)}\n{_tail(root / (name + '.log'))}"
                    )
            proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
            state = (proc.stdout + proc.stderr).strip()
            return state == "idle", state

        _wait_for("the Slurm node", node_idle, 60, root / "slurmctld.log")
        yield SlurmCluster(root, conf, env)
    finally:
        daemons.stop()


# ---- S3 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with its query string, e.g. '/bucket?list-type=2&prefix=runs%2F'


# Headers that describe one connection, not the request: the proxy frames each hop itself.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "expect"}
)


class _Recorder(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__((LOCALHOST, 0), _Forward)
        self.upstream = upstream
        self.seen: list[Request] = []
        self.lock = threading.Lock()


class _Forward(http.server.BaseHTTPRequestHandler):
    """Records the request, then forwards it unchanged (Host included, so signatures hold)."""

    # HTTP/1.1 so that keep-alive works and `Expect: 100-continue` gets its interim answer.
    protocol_version = "HTTP/1.1"
    server: _Recorder

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().split(b";", 1)[0], 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        with self.server.lock:
            self.server.seen.append(Request(self.command, self.path))
        body = self._body()
        upstream = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for key, value in self.headers.items():
                if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                    upstream.putheader(key, value)
            if body or self.command in ("PUT", "POST"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body)
            answer = upstream.getresponse()
            payload = answer.read()
        except OSError as exc:
            self.send_error(502, f"S3 server unreachable: {exc}")
            return
        finally:
            upstream.close()
        self.send_response_only(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in _HOP_BY_HOP and (key.lower() != "content-length" or self.command == "HEAD"):
                self.send_header(key, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # the record is self.server.seen; the S3 server keeps its own log


@contextmanager
def recording_proxy(upstream_port: int) -> Iterator[_Recorder]:
    """A proxy on 127.0.0.1 in front of upstream_port that records every request it passes on."""
    server = _Recorder((LOCALHOST, upstream_port))
    # A short poll interval: shutdown() waits for the serving loop's next poll.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="s3-recording-proxy", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass
class S3Server:
    """The S3 server as the tests reach it: endpoint and env point at the recording proxy."""

    endpoint: str
    env: dict[str, str]
    log: Path
    proxy: _Recorder

    def requests(self) -> list[Request]:
        """Every request made to the server so far, in the order they arrived, counted by our own
        proxy (the server's access log varies in format and colour between versions)."""
        with self.proxy.lock:
            return list(self.proxy.seen)


@contextmanager
def s3_server(root: Path) -> Iterator[S3Server]:
    """moto's standalone S3-compatible server on 127.0.0.1 behind a recording proxy, with test
    credentials in the environment."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = root / "moto.log"
    daemons = Daemons()
    try:
        try:
            import moto.server  # noqa: F401
        except ImportError as exc:
            raise ServiceError(
                f"moto's server is not installed ({exc}); pip install 'moto[server]' (the test extra has it)"
            ) from None
        proc = daemons.start(
            "moto", [sys.executable, "-m", "moto.server", "-H", LOCALHOST, "-p", str(port)], log, _aws_env(root, port)
        )

        def listening() -> tuple[bool, str]:
            daemons.check_alive("moto", proc, log)
            try:
                with socket.create_connection((LOCALHOST, port), timeout=0.5):
                    return True, "listening"
            except OSError as exc:
                return False, str(exc)

        _wait_for("the S3 server", listening, 30, log, every=0.05)  # a connect attempt: cheap
        with recording_proxy(port) as proxy:
            front = proxy.server_address[1]
            yield S3Server(f"http://{LOCALHOST}:{front}", _aws_env(root, front), log, proxy)
    finally:
        daemons.stop()


def _aws_env(root: Path, port: int) -> dict[str, str]:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": f"http://{LOCALHOST}:{port}",
        "AWS_CONFIG_FILE": str(root / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(root / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    env.pop("AWS_PROFILE", None)
    env.pop("AWS_SESSION_TOKEN", None)
    return env
