"""Durable state: the database (SQLAlchemy 2; SQLite by default, PostgreSQL by URL) and the
uploaded files, stored under their SHA-256 so that no user input ever names a path.

A submission is acknowledged only after its file is fsynced under its final name (and the
folder entry with it) and its row is committed, so a `kill -9` after the 202 loses
nothing; an upload cut off earlier leaves at most a temp file in `.incoming/`, which the
next start removes (unless a live process holds it: with PostgreSQL several share the folder).

Everything is created private (0600 files, 0700 folders) and no path is followed through a
link: temp files are O_EXCL | O_NOFOLLOW, and a stored file replaces whatever is at its
hash name. A SQLite database is locked (DATABASE.lock) for the life of the process.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from sqlalchemy import (JSON, DateTime, Integer, String, Text, UniqueConstraint, create_engine, delete, event, func,
                        inspect, select, text, update)
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from harness.errors import HarnessError

QUEUED, SCORED, FAILED = "queued", "scored", "failed"
# scored, then its task changed, and scoring it again failed: its earlier scores, off the board; or
# refused by its task's checks as it was scored (they changed since it was accepted): no scores
STALE = "stale"
WITHDRAWN = "withdrawn"  # by the organisers (harness serve --withdraw): kept, off the board, never scored again
# what a board counts of its task's submissions that it does not rank, in the order it says them
UNRANKED = (QUEUED, STALE, FAILED, WITHDRAWN)
CHARGED = "charged"  # an audit event: a refused upload counted against the day's quota, as a submission is
CHUNK = 1 << 20


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # naive UTC: the same on SQLite and PostgreSQL


def midnight() -> datetime:
    """When today (UTC) began: a team's daily quota counts from it, and frees at the next."""
    return now().replace(hour=0, minute=0, second=0, microsecond=0)


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
    # when `means` were scored: a failed try leaves it (None: never scored; stale: its earlier scoring)
    scored_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    means: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    per_query: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # shown to the owner only
    # what it was scored with (TaskRuntime.scored_with: the qrels' hash, depth, ...); None: scored
    # by a version that did not record it
    scored_with: Mapped[dict | None] = mapped_column(JSON, nullable=True)
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
    # accepted, duplicate, restored, rejected, charged, quota, withdrawn
    event: Mapped[str] = mapped_column(String(16))
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


class TeamLock(Base):
    """One row per team, locked (SELECT ... FOR UPDATE) while its quota is counted and a
    submission added: with PostgreSQL, several server processes count the same quota. It
    records the team's token's hash at the last start, which tells a renamed team (Store.add_teams)."""

    __tablename__ = "team_locks"

    team: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)  # None: recorded before it was


@dataclass(frozen=True)
class TeamChanges:
    """What a start's `teams:` changed of the recorded teams (Store.add_teams)."""

    renamed: list[tuple[str, str]]  # (name, new name): its token under another name
    new_token: list[str]  # a name given another token


DATABASES = ("sqlite", "postgresql")  # the backends the server is tested on


def database_url(database: str) -> URL:
    """The SQLAlchemy URL of a config's `database`: `postgresql://` goes through psycopg 3 (the
    serve extra's driver; SQLAlchemy 2.0 would look for psycopg2). ArgumentError if malformed."""
    url = make_url(database)
    return url.set(drivername="postgresql+psycopg") if url.drivername == "postgresql" else url


class Store:
    def __init__(self, database: str, storage: Path) -> None:
        self.storage = Path(storage)
        self.incoming = self.storage / ".incoming"
        self._lock_fd: int | None = None
        self._created: list[Path] = []  # by this start, in order: what `discard` removes
        url = database_url(database)
        try:  # the database first (a server not there, a second server): the storage is made last
            if database.startswith("sqlite:///"):
                path = Path(database.removeprefix("sqlite:///"))
                self._created += _private_folder(path.parent)
                self._lock_fd, lock = _exclusive(path)
                self._created += lock
                if _private_file(path):  # a new database, with the files SQLite makes beside it
                    self._created += [path, *(path.with_name(path.name + end) for end in ("-journal", "-wal", "-shm"))]
                self.engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60})
                event.listen(self.engine, "connect", _sqlite_pragmas)
            else:
                self.engine = create_engine(url, pool_pre_ping=True)
            Base.metadata.create_all(self.engine)
            _add_new_columns(self.engine, database)
            self._created += _private_folder(self.storage) + _private_folder(self.incoming)
        except SQLAlchemyError as error:  # no server there, a wrong password, ...: one line, never the password
            self.discard()
            raise HarnessError(f"cannot connect to database {_shown(database)}: "
                               f"{_reason(error, url.password)}") from None
        except BaseException:
            self.discard()
            raise
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        if hasattr(self, "engine"):
            self.engine.dispose()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None

    def discard(self) -> None:
        """Close, and remove what this start created (folders, a new database, its lock): a
        server that failed to start leaves nothing new on disk. A folder something else wrote
        into meanwhile stays. The lock is released last: a second server cannot take it and
        then lose the database it opened to this removal."""
        if hasattr(self, "engine"):
            self.engine.dispose()
        for path in reversed(self._created):
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                else:
                    path.unlink(missing_ok=True)
            except OSError:
                pass
        self._created = []
        self.close()

    def session(self) -> Session:
        return self.sessions()

    # --- files ---------------------------------------------------------------------------

    def discard_incomplete(self) -> int:
        """Remove uploads a killed process left in `.incoming/`; one another live process is
        still writing or checking (it holds the file's lock) stays."""
        removed = 0
        for path in self.incoming.iterdir():
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:  # a link (never the server's own) or gone already
                path.unlink(missing_ok=True)
                removed += 1
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            finally:
                os.close(fd)
            path.unlink(missing_ok=True)
            removed += 1
        return removed

    def receive(self, source: IO[bytes], limit: int) -> Received | None:
        """Copy an upload into `.incoming/`, hashing it; None (and nothing kept) past `limit`.
        The file is private, locked (see discard_incomplete) and open until `done`."""
        name = self.incoming / f"{secrets.token_hex(8)}.part"
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        received = Received(name, "", fd)
        digest, size = hashlib.sha256(), 0
        try:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > limit:
                    received.done()
                    return None
                digest.update(chunk)
                os.write(fd, chunk)
            os.fsync(fd)
        except BaseException:
            received.done()
            raise
        received.sha256 = digest.hexdigest()
        return received

    def keep(self, received: Received) -> Path:
        """Move a received file to its content-hash name, durably (file and folder entry).
        Whatever is at that name is replaced, never followed: a link planted there is gone."""
        final = self.file(received.sha256)
        os.replace(received.path, final)
        _fsync_folder(self.storage)
        return final

    def file(self, sha256: str) -> Path:
        return self.storage / sha256

    def stored_file(self, sha256: str) -> Path:
        """The stored file, refused unless it is a plain file (the server writes no links)."""
        path = self.file(sha256)
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError(f"{path.name} is not a plain file")
        return path

    def lost(self, sha256: str) -> bool:
        """Whether a submission's file is not in storage as a plain file (deleted, or missed by a
        restore): an upload of the same bytes stores it again (`keep` replaces whatever is there)."""
        try:
            return not stat.S_ISREG(os.lstat(self.file(sha256)).st_mode)
        except FileNotFoundError:
            return True

    # --- rows ----------------------------------------------------------------------------

    def add_teams(self, teams: Mapping[str, str]) -> TeamChanges:
        """A TeamLock row per team (name -> its token's hash), the hash recorded. A team is its
        token: one recorded under a name the config now gives its token another name is renamed,
        its submissions, audit rows (its quota) and browser sessions with it, so that neither are
        its runs orphaned nor does a new team given the old name own them; a name given another
        token (a lost one replaced) keeps its submissions, its browser sessions ended."""
        by_hash = {digest: name for name, digest in teams.items()}
        with self.session() as session:
            recorded = {row.team: row for row in session.scalars(select(TeamLock).with_for_update())}
            renamed = {old: by_hash[row.token_sha256] for old, row in recorded.items()
                       if by_hash.get(row.token_sha256, old) != old}
            for old, new in renamed.items():
                if new in renamed or (new in recorded and session.scalar(
                        select(func.count()).select_from(Submission).where(Submission.team == new))):
                    raise HarnessError(f"teams: {new} has the token team {old} had at the last start, but {new} is a "
                                       f"team of its own (with submissions, or renamed too): a team is its token, its "
                                       f"name what the board shows; give {new} its own token, or rename {old} to a "
                                       "name no team with submissions has (tokens swapped or renamed in a chain are "
                                       "refused)")
            new_token = [name for name, digest in teams.items() if name in recorded and name not in renamed
                         and name not in renamed.values() and recorded[name].token_sha256 not in (None, digest)]
            for name in [*renamed.values(), *new_token]:  # logged in with a token that is not the name's now
                session.execute(delete(WebSession).where(WebSession.team == name))
            for old, new in renamed.items():
                for table in (Submission, Audit, WebSession):
                    session.execute(update(table).where(table.team == old).values(team=new))
                session.delete(recorded.pop(old))
                if new in recorded:  # a name that had no submissions
                    session.delete(recorded.pop(new))
            session.flush()
            for name, digest in teams.items():
                if name in recorded:
                    recorded[name].token_sha256 = digest
                else:
                    session.add(TeamLock(team=name, token_sha256=digest))
            try:
                session.commit()
            except IntegrityError:  # another process starting recorded the same first
                session.rollback()
                return TeamChanges([], [])
        return TeamChanges(list(renamed.items()), new_token)

    def lock_team(self, session: Session, team: str) -> None:
        """Hold the team's row until the session commits (PostgreSQL; SQLite has one process)."""
        session.execute(select(TeamLock).where(TeamLock.team == team).with_for_update())

    def charged_today(self, session: Session, team: str) -> int:
        """What the team's quota has spent today (UTC): its submissions, and its refusals charged
        as one (CHARGED: a refusal that tells what a task hides, Service._refuse)."""
        since = midnight()
        submitted = select(func.count()).select_from(Submission).where(
            Submission.team == team, Submission.created_at >= since
        )
        charged = select(func.count()).select_from(Audit).where(
            Audit.team == team, Audit.event == CHARGED, Audit.at >= since
        )
        return int(session.scalar(submitted) or 0) + int(session.scalar(charged) or 0)

    def audit(self, session: Session, **fields: Any) -> None:
        session.add(Audit(**fields))

    def requeue_failed(self, tasks: Iterable[str]) -> dict[str, int]:
        """Queue again, their note cleared, the failed submissions of `tasks`, for a worker to
        score from their stored files: a failure the server's own (a scoring bug fixed since;
        a worker that claimed another task's submissions and marked them failed) is not the
        team's. The number queued again, per task that had any."""
        queued: dict[str, int] = {}
        with self.session() as session:
            for row in session.scalars(select(Submission).where(Submission.status == FAILED,
                                                                Submission.task.in_(list(tasks)))):
                row.status, row.error = QUEUED, None
                queued[row.task] = queued.get(row.task, 0) + 1
            session.commit()
        return queued

    def withdraw(self, idents: Iterable[str], teams: Iterable[str], reason: str) -> list[Submission]:
        """Withdraw the submissions `idents` and every submission of `teams` (a team taken off
        the config keeps its rows): kept with their scores, off the board, never scored again,
        their teams told why, an audit row each. Those withdrawn now, in the order of `idents`
        and then of submission; an id no row has, or a team none has, is an error, and nothing
        is withdrawn."""
        idents, teams = list(dict.fromkeys(idents)), list(dict.fromkeys(teams))
        note = "withdrawn by the organisers" + (f": {reason}" if reason else "")
        with self.session() as session:
            rows = {row.id: row for row in session.scalars(select(Submission).where(Submission.id.in_(idents)))}
            missing = [ident for ident in idents if ident not in rows]
            if missing:
                raise HarnessError(f"no submission has the id {missing[0]!r} (a submission's id is the one its "
                                   "upload's 202 and the log's 'accepted submission' line give)")
            chosen = [rows[ident] for ident in idents]
            for team in teams:
                owned = list(session.scalars(select(Submission).where(Submission.team == team)
                                             .order_by(Submission.created_at, Submission.id)))
                if not owned:
                    raise HarnessError(f"team {team!r} has no submission")
                chosen += [row for row in owned if row.id not in idents]
            withdrawn = [row for row in chosen if row.status != WITHDRAWN]
            for row in withdrawn:
                row.status, row.error = WITHDRAWN, note
                self.audit(session, team=row.team, task=row.task, sha256=row.sha256, event=WITHDRAWN,
                           detail=f"{row.id}: {reason}"[:2000] if reason else row.id)
            session.commit()
        return withdrawn


@dataclass
class Received:
    """An upload in `.incoming/`: its hash, and its descriptor, which holds its lock."""

    path: Path
    sha256: str
    fd: int | None

    def done(self) -> None:
        """Remove the file if still there (not kept) and let go of it."""
        self.path.unlink(missing_ok=True)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _add_new_columns(engine: Engine, database: str) -> None:
    """Add to a database made by an earlier version the columns added since (create_all makes
    missing tables only), empty: its rows are read as rows of before (a column added later must
    be nullable). With PostgreSQL several processes may start at once: IF NOT EXISTS. A role
    that may not alter the table (PostgreSQL: not its owner) is told what its owner should run."""
    tables = inspect(engine)
    for table in Base.metadata.sorted_tables:
        present = {column["name"] for column in tables.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present:
                missing = " IF NOT EXISTS" if engine.dialect.name == "postgresql" else ""
                statement = (f"ALTER TABLE {table.name} ADD COLUMN{missing} {column.name} "
                             f"{column.type.compile(dialect=engine.dialect)}")
                try:
                    with engine.begin() as connection:
                        connection.execute(text(statement))
                except SQLAlchemyError as error:
                    raise HarnessError(f"database {_shown(database)}: table {table.name} lacks the column "
                                       f"{column.name} this version adds, and adding it failed "
                                       f"({_reason(error, engine.url.password)}); have the table's owner run: "
                                       f"{statement};") from None


def _private_folder(folder: Path) -> list[Path]:
    """Create the folder, and each missing parent, readable by the server's user only; the
    folders created, outermost first."""
    missing = [f for f in (*reversed(folder.parents), folder) if not f.exists()]
    created = []
    for path in missing:
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process: not ours to remove
            continue
        created.append(path)
    return created


def _private_file(path: Path) -> bool:
    """Create an empty database file readable by the server's user only, if none is there
    (SQLite gives its -wal and -shm files the same mode); whether it was created."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        return False
    return True


def _shown(database: str) -> str:
    """The database URL as the config has it, without its password."""
    return make_url(database).render_as_string(hide_password=True)


def _reason(error: SQLAlchemyError, password: str | None) -> str:
    """The driver's own words on a failed connection, on one line, without the password."""
    reason = " ".join(str(getattr(error, "orig", None) or error).split())
    return reason.replace(password, "***") if password else reason


def _exclusive(database: Path) -> tuple[int, list[Path]]:
    """Lock `DATABASE.lock` for this process's life: a second server on the same SQLite
    database refuses to start (its quota and scoring queue are counted in one process).
    The descriptor holding the lock, and the lock file if this call created it."""
    lock = database.with_name(database.name + ".lock")
    try:
        fd, created = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), [lock]
    except FileExistsError:
        fd, created = os.open(lock, os.O_RDWR | os.O_NOFOLLOW), []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HarnessError(f"another harness serve is running on {database} (it holds {lock}); with SQLite one "
                           "process serves a database, with PostgreSQL several may") from None
    return fd, created


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
