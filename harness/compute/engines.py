"""Engines: where shard tasks run and shard searchers live. `local` runs them in this
process (today's behaviour, the default); `ray` runs them on a Ray cluster, started here or
joined at an address. Both hand results back in completion order; outputs never depend on
that order (the shard plan fixes them), only progress does."""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import threading
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, TypeVar

from harness.errors import HarnessError, InputError
from harness.registry import (INT_LIMIT, AtLeast, Between, ParamError, ParamType, Registry, check_value,
                              number_problem)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class EngineSpec:
    """What the CLI's --engine/--address/--workers and a config's `engine:` mapping say."""

    name: str = "local"
    address: str | None = None  # ray: a running cluster ("auto", "HOST:6379", "ray://HOST:10001"); none: start one here
    workers: int | None = None  # shard tasks in flight at once (default: the cluster's CPUs, locally 1)
    gpus: float = 0.0  # ray: GPUs per encoding task (a fraction shares one GPU between tasks)
    retries: int = 3  # ray: times a task is retried after its worker process or node dies
    # the fields whose type is narrower than their annotation (workers: workers_problem)
    RANGES: ClassVar[dict[str, ParamType]] = {"gpus": Between(0), "retries": AtLeast(0)}

    @classmethod
    def from_mapping(cls, value: Any, key: str = "engine") -> EngineSpec:
        """`engine: ray` or `engine: {name: ray, address: ..., workers: 2}`, each value of its
        field's type; a problem is a ParamError at `key` (a config's `params.engine`, as
        EngineParam checks it)."""
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict):
            raise ParamError(key, f"must be an engine name or a mapping with a name; got {value!r}")
        known = {field.name for field in fields(cls)}
        unknown = sorted(map(str, set(value) - known))  # YAML keys need not be strings: {1: 2}
        if unknown:
            raise ParamError(key, f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        declared = typing.get_type_hints(cls)
        for name, given in value.items():
            if name != "workers":  # its own rule, which counts the cores (workers_problem)
                check_value(f"{key}.{name}", given, cls.RANGES.get(name, declared[name]))
        spec = cls(**value)
        try:
            ENGINES.get(spec.name)  # an unknown engine fails before any work
        except HarnessError as error:
            raise ParamError(key, str(error)) from None
        if problem := spec.workers_problem():
            raise ParamError(f"{key}.workers", problem)
        return spec

    def workers_problem(self) -> str | None:
        """What is wrong with `workers` unless it is null or a count of tasks this engine can
        run at once. Where they run on this machine (the local engine, or a Ray instance
        started here, given that many CPUs: 10000 gave it 10000, a worker process per task in
        flight), at most the cores this process may use; on a Ray cluster joined at an
        address, whose nodes this machine cannot count before it joins, any count."""
        if self.workers is None:
            return None
        here = self.name == "local" or not self.address
        problem = number_problem(self.workers, 1, usable_cores() if here else INT_LIMIT, whole=True)
        if not problem:
            return None
        why = " (the cores this process may use; a Ray cluster joined with an address may take more)" if here else ""
        return f"{problem}{why}, not {self.workers!r}"


@dataclass(frozen=True)
class EngineParam(ParamType):
    """The type of a component's `engine:` parameter, read as EngineSpec.from_mapping reads it:
    an unknown engine or key is an error at its key when a config is read, not when the
    component is built, after the runs before it."""

    def check(self, key: str, value: Any) -> None:
        if value is not None:
            EngineSpec.from_mapping(value, key)

    def describe(self) -> str:
        return "an engine name (local, ray), a mapping {name, address, workers, gpus, retries} or null"


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a container's or taskset's limit),
    not all the machine's, as os.cpu_count says."""
    return len(os.sched_getaffinity(0))


class Held(Protocol):
    """A shard searcher (or any object) living on the engine: its methods return futures."""

    def call(self, method: str, *args: Any) -> Any: ...


class Engine(Protocol):
    workers: int

    def map(self, function: Callable[[T], R], tasks: Iterable[T]) -> Iterator[tuple[T, R]]:
        """(task, result) as tasks finish; tasks are pulled lazily, `workers` in flight."""
        ...

    def hold(self, cls: type, *args: Any) -> Held:
        """An instance of cls built where the engine puts it (a Ray actor: spread over nodes)."""
        ...

    def get(self, futures: list[Any]) -> list[Any]: ...

    def close(self) -> None: ...


ENGINES: Registry[Callable[[EngineSpec], Engine]] = Registry("engine")


class _Local:
    def __init__(self, instance: Any) -> None:
        self.instance = instance

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.instance, method)(*args)


@ENGINES.register("local")
class LocalEngine:
    """In this process, one task after another (segmentation still uses its worker processes)."""

    def __init__(self, spec: EngineSpec) -> None:
        self.workers = 1

    def map(self, function, tasks):
        for task in tasks:
            yield task, function(task)

    def hold(self, cls, *args):
        return _Local(cls(*args))

    def get(self, futures):
        return list(futures)

    def close(self) -> None:
        pass


class _Actor:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.handle, method).remote(*args)


CONNECT_TIMEOUT_S = 10


def _answering(address: str) -> None:
    """A cluster address (HOST:PORT, ray://HOST:PORT) that nothing answers on is one line at
    once: ray.init would retry for minutes, deaf to Ctrl-C and SIGTERM meanwhile. "auto" and
    other forms are left to Ray."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise HarnessError(f"cannot join the Ray cluster {address}: nothing answers there "
                           f"({error.strerror or error}); is a head node started (ray start --head)?") from None


@contextmanager
def _ctrl_c_held() -> Iterator[list[int]]:
    """Ctrl-C held off while Ray starts or stops its processes; the list says whether one came.
    One landing inside ray.init left a half-started instance that ray.shutdown cannot reach
    (its raylet's agents outlived the command by a minute), and one inside ray.shutdown a
    half-stopped one. Only the main thread can set a handler, and only it is sent
    KeyboardInterrupt: elsewhere, nothing changes."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


# Ray's own words where a cluster with token authentication refused this driver (Ray 2.60: the
# GCS answers "Unauthenticated: RPC error: InvalidAuthToken: ...", raised as
# ray.exceptions.AuthenticationError, whose traceback is the text of the RuntimeError behind
# ray.init's "Failed to connect to Ray cluster at ...").
_REFUSED_TOKEN = re.compile(r"\bray\.exceptions\.AuthenticationError\b|\bInvalidAuthToken\b")


def _cannot_start(address: str | None, error: BaseException) -> str:
    """ray.init's failure in one line; where Ray's words say the cluster refused the token, what
    to set (its own AuthenticationError, raised before it connects, says so itself)."""
    said = f"cannot start or join the Ray cluster {address or '(local)'}: {error}"
    cause: BaseException | None = error
    while cause is not None:
        if _REFUSED_TOKEN.search(str(cause)):
            return (f"{said}: the cluster uses Ray's token authentication and refused this driver; run it with "
                    "RAY_AUTH_MODE=token and the cluster's token (in ~/.ray/auth_token or RAY_AUTH_TOKEN; "
                    "`ray get-auth-token` prints it on the head node), or start every node with "
                    "RAY_AUTH_MODE=disabled on a trusted network")
        cause = cause.__cause__ or cause.__context__
    return said


@ENGINES.register("ray")
class RayEngine:
    """Ray Core tasks and actors. Without an address, a one-machine Ray instance is started
    (and stopped by close); with one, the driver joins that cluster. Every node must be able
    to import `harness` and read the input and output paths (a shared file system)."""

    def __init__(self, spec: EngineSpec) -> None:
        try:
            import ray
        except ModuleNotFoundError:
            from harness.extras import needs_extra

            raise HarnessError(needs_extra("ray")) from None
        self.ray, self.spec = ray, spec
        self._started = not ray.is_initialized()
        if self._started:
            options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
            if spec.address:
                _answering(spec.address)
                options["address"] = spec.address
            else:  # "local": a new instance, never a cluster some other process started on this machine
                options.update(address="local", num_cpus=spec.workers or os.cpu_count() or 1, include_dashboard=False)
            # joining starts no process here, and may take Ray 20 s to give up: Ctrl-C stays at once
            with nullcontext([]) if spec.address else _ctrl_c_held() as interrupted:
                try:
                    ray.init(**options)
                except (ConnectionError, RuntimeError, ValueError, ray.exceptions.AuthenticationError) as error:
                    raise HarnessError(_cannot_start(spec.address, error)) from None  # the last: no token here
            if interrupted:
                self.close()
                raise KeyboardInterrupt
        self.workers = spec.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, function, tasks):
        ray = self.ray
        remote = ray.remote(function).options(num_cpus=1, num_gpus=self.spec.gpus, max_retries=self.spec.retries)
        tasks = iter(tasks)
        in_flight: dict[Any, Any] = {}
        while True:
            while len(in_flight) < self.workers and (task := next(tasks, None)) is not None:
                in_flight[remote.remote(task)] = task
            if not in_flight:
                return
            (done,), _ = ray.wait(list(in_flight), num_returns=1)
            task = in_flight.pop(done)
            try:
                result = ray.get(done)
            except ray.exceptions.RayError as error:
                if isinstance(getattr(error, "cause", None), InputError):  # the input's fault (a file's line)
                    raise error.cause from None  # in its one line, as the local engine says it, no remote traceback
                raise HarnessError(f"shard task failed on the Ray cluster: {error}") from None
            yield task, result

    def hold(self, cls, *args):
        actor = self.ray.remote(cls).options(num_cpus=0, scheduling_strategy="SPREAD")
        return _Actor(actor.remote(*args))

    def get(self, futures):
        return self.ray.get(list(futures))

    def close(self) -> None:
        """Stops the Ray instance started here (or leaves the cluster joined); a Ctrl-C meanwhile
        is passed over, as the work is done or already interrupted."""
        if self._started:
            with _ctrl_c_held():
                self.ray.shutdown()


def start_engine(spec: EngineSpec) -> Engine:
    return ENGINES.get(spec.name)(spec)


def add_engine_arguments(parser: argparse.ArgumentParser, shard_docs_default: int) -> None:
    """--engine, --address, --workers, --shard-docs: the same on every scaled command."""
    parser.add_argument("--engine", default="local", choices=ENGINES.names(),
                        help="where shards are processed: local (this machine, default) or ray")
    parser.add_argument("--address", default=None,
                        help="ray: address of a running cluster (auto, HOST:6379); default: start Ray here")
    parser.add_argument("--workers", type=int, default=None,
                        help="shard tasks in flight (ray default: the cluster's CPUs); at most the cores this "
                        "process may use, unless a Ray cluster is joined with --address")
    parser.add_argument("--shard-docs", type=int, default=None,
                        help=f"documents per shard (default {shard_docs_default}; a ClueWeb22 folder is "
                        "split one shard per file)")


def engine_spec(args: argparse.Namespace) -> EngineSpec:
    """The engine the options name, its --workers and --shard-docs checked (one line each)."""
    if args.shard_docs is not None and (problem := number_problem(args.shard_docs, 1, INT_LIMIT, whole=True)):
        raise HarnessError(f"--shard-docs {problem}, not {args.shard_docs}")
    spec = EngineSpec(name=args.engine, address=args.address, workers=args.workers)
    if problem := spec.workers_problem():
        raise HarnessError(f"--workers {problem}")
    return spec
