"""Durable state: the database (SQLAlchemy 2; SQLite by default, PostgreSQL by URL) and the
uploaded files, stored under their SHA-256 so that no user input ever names a path.

A submission is acknowledged only after its file is fsynced under its final name (and the
folder entry with it) and its row is committed, so a `kill -9` after the 202 loses
nothing; an upload cut off earlier leaves at most a temp file in `.incoming/`, which the
next start removes.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from sqlalchemy import JSON, DateTime, Integer, String, Text, UniqueConstraint, create_engine, event, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

QUEUED, SCORED, FAILED = "queued", "scored", "failed"
CHUNK = 1 << 20


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # naive UTC: the same on SQLite and PostgreSQL


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Base(DeclarativeBase):
    pass


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("task", "team", "sha256"),)

    id: Mapped[str] = mapped_column(String(16), primary_key=True)  # from (task, team, file hash)
    task: Mapped[str] = mapped_column(String(64), index=True)
    team: Mapped[str] = mapped_column(String(64), index=True)
    sha256: Mapped[str] = mapped_column(String(64))
    format: Mapped[str] = mapped_column(String(32))
    run_name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=now)
    status: Mapped[str] = mapped_column(String(16), default=QUEUED, index=True)
    scored_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    means: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    per_query: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # shown to the owner only
    warnings: Mapped[list] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class Audit(Base):
    """Every upload attempt, accepted or not: who, when, what file, what happened."""

    __tablename__ = "audit"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=now)
    team: Mapped[str] = mapped_column(String(64))
    task: Mapped[str] = mapped_column(String(64))
    sha256: Mapped[str] = mapped_column(String(64), default="")
    event: Mapped[str] = mapped_column(String(16))  # accepted, duplicate, rejected, quota
    detail: Mapped[str] = mapped_column(Text, default="")


class WebSession(Base):
    """A browser login. Only hashes are stored: a leaked database opens no session."""

    __tablename__ = "sessions"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    team: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(DateTime)


def submission_id(task: str, team: str, sha256: str) -> str:
    """Deterministic: the same file from the same team for the same task is one submission."""
    return sha256_hex(f"{task}\0{team}\0{sha256}")[:16]


class Store:
    def __init__(self, database: str, storage: Path) -> None:
        self.storage = Path(storage)
        self.incoming = self.storage / ".incoming"
        self.incoming.mkdir(parents=True, exist_ok=True)
        if database.startswith("sqlite:///"):
            Path(database.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(database, connect_args={"check_same_thread": False, "timeout": 60})
            event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = create_engine(database, pool_pre_ping=True)
        Base.metadata.create_all(self.engine)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    def session(self) -> Session:
        return self.sessions()

    # --- files ---------------------------------------------------------------------------

    def discard_incomplete(self) -> int:
        """Remove uploads a previous process was killed in the middle of."""
        leftovers = list(self.incoming.iterdir())
        for path in leftovers:
            path.unlink(missing_ok=True)
        return len(leftovers)

    def receive(self, source: IO[bytes], limit: int) -> tuple[Path, str] | None:
        """Copy an upload into `.incoming/`, hashing it; None (and nothing kept) past `limit`."""
        fd, name = _temp(self.incoming)
        digest, size = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := source.read(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise _TooLarge
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
        except BaseException as problem:
            Path(name).unlink(missing_ok=True)
            if isinstance(problem, _TooLarge):
                return None
            raise
        return Path(name), digest.hexdigest()

    def keep(self, temp: Path, sha256: str) -> Path:
        """Move a received file to its content-hash name, durably (file and folder entry)."""
        final = self.file(sha256)
        if final.exists():
            temp.unlink()
        else:
            os.replace(temp, final)
            _fsync_folder(self.storage)
        return final

    def file(self, sha256: str) -> Path:
        return self.storage / sha256

    # --- rows ----------------------------------------------------------------------------

    def accepted_today(self, session: Session, team: str) -> int:
        midnight = now().replace(hour=0, minute=0, second=0, microsecond=0)
        query = select(func.count()).select_from(Submission).where(
            Submission.team == team, Submission.created_at >= midnight
        )
        return int(session.scalar(query) or 0)

    def audit(self, session: Session, **fields: Any) -> None:
        session.add(Audit(**fields))


class _TooLarge(Exception):
    pass


def _temp(folder: Path) -> tuple[int, str]:
    name = folder / f"{secrets.token_hex(8)}.part"
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), str(name)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sqlite_pragmas(connection, _record) -> None:
    """WAL lets the pages read while a submission commits; FULL syncs every commit to disk."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()
