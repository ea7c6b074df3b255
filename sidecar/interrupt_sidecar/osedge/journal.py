"""The write-ahead journal: executions, pinned process groups and trips in SQLite (WAL).

Why: the daemon's promise is "nothing that was tripped is forgotten, no orphans". A
``kill -9`` of the daemon must not leave tool processes of a tripped execution running,
nor forget that an execution tripped. So every fact the restart needs is written before
(or, for the trip, right after the tools' cancels are handed to their streams, and
before any process group is signalled) the moment it matters:

* ``executions``: one row per execution not yet forgotten — its spec, its attach token's id
  and secret digest (never the secret), whether a holder held it, its trip, whether it ended;
* ``process_groups``: every registered process-group terminator with the identity pinned at
  registration (leader start time, session), so the restarted daemon re-checks identity
  before it signals anything (a PID recycled while the daemon was down is never hit).

Durability: WAL with ``synchronous=NORMAL``. A committed transaction survives the death of
the daemon process (it is in the OS page cache and the WAL file); only a power loss could
lose the last commits, and with them the processes they describe. Writes are single-row
statements in autocommit mode, a few microseconds each on tmpfs or a page-cache-backed disk.

The journal is plain data (ints, strings, bytes): it knows nothing of the domain, so the
OS edge stays beside the domain, not above it.

A disk that fails (full, read-only, I/O errors) must not stop the daemon from killing, so
writes come in two kinds (see docs/operations-faults.md for the promise users get):

* **write-ahead** (``begun``, ``group_registered``): the fact is only true once written. A
  failure raises ``JournalUnavailable`` and the caller refuses the request it serves.
* **after the fact** (trips, holders, ends, drops, forgets): what they record has happened
  already, in memory and often to processes. A failure never raises: the write is kept,
  in order, and replayed by ``retry`` before any later one, so the journal never holds a
  later fact without an earlier one. Until every kept write is through, ``healthy`` is
  False: the daemon reports NOT_SERVING and answers no Interrupt as durable.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from interrupt_sidecar.errors import SidecarError
from interrupt_sidecar.record import Record, init_field

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

#: After-the-fact writes kept while the disk fails; beyond this the oldest facts would be
#: dropped, so the journal gives up on them loudly instead (see ``_keep``). Each live
#: execution makes a handful, and begins are refused meanwhile, so this is not reached
#: in practice.
MAX_KEPT_WRITES = 1_000_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS executions (
    execution_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    token_id TEXT NOT NULL,
    token_digest BLOB NOT NULL,
    begun_wall_ns INTEGER NOT NULL,
    held INTEGER NOT NULL DEFAULT 0,
    trip_reason INTEGER,
    trip_detail TEXT,
    trip_wall_ns INTEGER,
    ended INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS probe (
    id INTEGER PRIMARY KEY,
    at_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS process_groups (
    execution_id TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    terminator_id TEXT NOT NULL,
    pgid INTEGER NOT NULL,
    leader_start INTEGER,
    session INTEGER,
    signal INTEGER NOT NULL,
    kill_after_ns INTEGER,
    PRIMARY KEY (execution_id, tool_id, terminator_id)
);
"""


class JournalError(SidecarError):
    """The journal cannot be opened or read (a corrupt file, a newer schema)."""

    status_name = "INTERNAL"


class JournalUnavailable(SidecarError):
    """The journal cannot write right now (disk full, read-only, I/O errors): a request
    whose promise needs the write is refused; retry when the daemon's health is SERVING."""

    status_name = "UNAVAILABLE"


class JournaledGroup(Record):
    """A process group registered to a journaled execution, as pinned at registration."""

    __slots__ = ("kill_after_ns", "leader_start", "pgid", "session", "signal", "terminator_id", "tool_id")
    tool_id: str
    terminator_id: str
    pgid: int
    leader_start: int | None
    session: int | None
    signal: int
    kill_after_ns: int | None

    def __init__(
        self,
        tool_id: str,
        terminator_id: str,
        pgid: int,
        leader_start: int | None,
        session: int | None,
        signal: int,
        kill_after_ns: int | None,
    ) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "terminator_id", terminator_id)
        init_field(self, "pgid", pgid)
        init_field(self, "leader_start", leader_start)
        init_field(self, "session", session)
        init_field(self, "signal", signal)
        init_field(self, "kill_after_ns", kill_after_ns)


class JournaledExecution(Record):
    """An execution as the journal last recorded it, read back at start."""

    __slots__ = (
        "begun_wall_ns",
        "ended",
        "execution_id",
        "groups",
        "held",
        "spec",
        "token_digest",
        "token_id",
        "trip_detail",
        "trip_reason",
        "trip_wall_ns",
    )
    execution_id: str
    #: parent_execution_id, context_id, grace_ns, budget_ns, lease_ttl_ns, labels.
    spec: dict[str, object]
    token_id: str
    token_digest: bytes
    begun_wall_ns: int
    held: bool
    trip_reason: int | None
    trip_detail: str
    trip_wall_ns: int | None
    ended: bool
    groups: list[JournaledGroup]

    def __init__(
        self,
        execution_id: str,
        spec: dict[str, object],
        token_id: str,
        token_digest: bytes,
        begun_wall_ns: int,
        held: bool,
        trip_reason: int | None,
        trip_detail: str,
        trip_wall_ns: int | None,
        ended: bool,
        groups: list[JournaledGroup] | None = None,
    ) -> None:
        init_field(self, "execution_id", execution_id)
        init_field(self, "spec", spec)
        init_field(self, "token_id", token_id)
        init_field(self, "token_digest", token_digest)
        init_field(self, "begun_wall_ns", begun_wall_ns)
        init_field(self, "held", held)
        init_field(self, "trip_reason", trip_reason)
        init_field(self, "trip_detail", trip_detail)
        init_field(self, "trip_wall_ns", trip_wall_ns)
        init_field(self, "ended", ended)
        init_field(self, "groups", [] if groups is None else groups)


class Journal:
    """One SQLite database under ``--state-dir``. Used from the event-loop thread only."""

    def __init__(self, path: Path) -> None:
        # Imported here: a daemon without --state-dir never opens a journal, and sqlite3
        # is about 1 MiB of its idle memory (json, ~1 ms of its start-up, likewise).
        import json
        import sqlite3

        self.path = path
        self._json_dumps, self._json_loads = json.dumps, json.loads
        self._database_error: type[sqlite3.DatabaseError] = sqlite3.DatabaseError
        # sqlite3 is not a module global (see above): the methods catch its errors by this name.
        self._sqlite_error: type[sqlite3.Error] = sqlite3.Error
        try:
            # isolation_level=None: autocommit, each statement is its own transaction.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"journal {path} has schema version {version}, newer than this daemon's {SCHEMA_VERSION}; "
                    "upgrade the daemon or move the journal away"
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as err:
            raise JournalError(f"cannot open the journal {path}: {err}") from err

        #: After-the-fact writes that failed, oldest first, replayed by ``retry``.
        self._kept: list[tuple[str, tuple[object, ...]]] = []
        #: The last write failed and no write has succeeded since.
        self._failing: str | None = None
        #: Called (on the event loop's thread, like every write) at each failed write, so a
        #: watcher can sleep while the journal is healthy instead of polling it.
        self.on_failure: Callable[[], None] | None = None

    def close(self) -> None:
        if self._kept and not self._flush():
            log.error(
                "journal %s closed with %d write(s) it could not make: %s", self.path, len(self._kept), self._failing
            )
        self._db.close()

    # -- health --------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        """Every write so far is in the journal, and the last one succeeded."""
        return self._failing is None and not self._kept

    @property
    def failure(self) -> str | None:
        """Why the journal cannot write (the last error), or None while it can."""
        return self._failing

    def retry(self) -> bool:
        """Replay the kept writes in order, or probe the disk when none is kept; True once
        the journal is healthy again."""
        if self.healthy:
            return True
        if not self._flush():
            return False
        if self._failing is not None:
            # Only a write-ahead failed (nothing was kept): a real write proves the disk is back.
            try:
                self._db.execute("INSERT OR REPLACE INTO probe (id, at_ns) VALUES (1, ?)", (time.time_ns(),))
            except self._sqlite_error as err:
                self._failed(err)
                return False
            self._recovered()
        return True

    def _flush(self) -> bool:
        """Write the kept writes, oldest first; False (still kept) at the first failure."""
        wrote = False
        while self._kept:
            statement, params = self._kept[0]
            try:
                self._db.execute(statement, params)
            except self._sqlite_error as err:
                self._failed(err)
                return False
            del self._kept[0]
            wrote = True
        if wrote and self._failing is not None:
            self._recovered()
        return True

    def _failed(self, err: sqlite3.Error) -> None:
        # SQLite reports EIO and EROFS alike as "disk I/O error"; its error name says which call failed.
        message = f"{err} ({getattr(err, 'sqlite_errorname', None) or type(err).__name__})"
        if self._failing is None:
            log.error("journal %s cannot write: %s; the daemon reports NOT_SERVING until it can", self.path, message)
        self._failing = message
        if self.on_failure is not None:
            self.on_failure()

    def _recovered(self) -> None:
        log.warning("journal %s writes again, every kept write is in; the daemon reports SERVING", self.path)
        self._failing = None

    def _ahead(self, statement: str, params: tuple[object, ...]) -> None:
        """A write-ahead: written now (after everything kept) or refused."""
        if not self._flush():
            raise JournalUnavailable(self._refusal())
        try:
            self._db.execute(statement, params)
        except self._sqlite_error as err:
            self._failed(err)
            raise JournalUnavailable(self._refusal()) from err
        if self._failing is not None:
            self._recovered()

    def _keep(self, statement: str, params: tuple[object, ...]) -> None:
        """An after-the-fact write: written now, or kept (in order) for ``retry``. Never raises."""
        if len(self._kept) >= MAX_KEPT_WRITES:
            log.critical("journal %s: %d writes kept unwritten; dropping the oldest", self.path, len(self._kept))
            del self._kept[0]
        self._kept.append((statement, params))
        self._flush()

    def _refusal(self) -> str:
        return (
            f"the journal in the state directory cannot write ({self._failing}): free space or fix the disk "
            f"under {self.path.parent}; the daemon's health is NOT_SERVING until it can"
        )

    # -- writes --------------------------------------------------------------

    def begun(
        self,
        execution_id: str,
        spec: dict[str, object],
        token_id: str,
        token_digest: bytes,
        begun_wall_ns: int,
        *,
        held: bool = False,
    ) -> None:
        self._ahead(
            "INSERT OR REPLACE INTO executions (execution_id, spec, token_id, token_digest, begun_wall_ns, held) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (execution_id, self._json_dumps(spec, sort_keys=True), token_id, token_digest, begun_wall_ns, int(held)),
        )

    def held(self, execution_id: str) -> None:
        self._keep("UPDATE executions SET held = 1 WHERE execution_id = ?", (execution_id,))

    def tripped(self, execution_id: str, reason: int, detail: str, wall_ns: int) -> None:
        self._keep(
            "UPDATE executions SET trip_reason = ?, trip_detail = ?, trip_wall_ns = ? "
            "WHERE execution_id = ? AND trip_reason IS NULL",
            (reason, detail, wall_ns, execution_id),
        )

    def ended(self, execution_id: str) -> None:
        self._keep("UPDATE executions SET ended = 1 WHERE execution_id = ?", (execution_id,))

    def forget(self, execution_id: str) -> None:
        """Nothing more can happen to this execution: drop it and its groups."""
        self._keep("DELETE FROM process_groups WHERE execution_id = ?", (execution_id,))
        self._keep("DELETE FROM executions WHERE execution_id = ?", (execution_id,))

    def group_registered(self, execution_id: str, group: JournaledGroup) -> None:
        self._ahead(
            "INSERT OR REPLACE INTO process_groups "
            "(execution_id, tool_id, terminator_id, pgid, leader_start, session, signal, kill_after_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                execution_id,
                group.tool_id,
                group.terminator_id,
                group.pgid,
                group.leader_start,
                group.session,
                group.signal,
                group.kill_after_ns,
            ),
        )

    def group_dropped(self, execution_id: str, tool_id: str, terminator_id: str | None = None) -> None:
        """A group is no longer to be killed (unregistered, or its tool unwound)."""
        if terminator_id is None:
            self._keep("DELETE FROM process_groups WHERE execution_id = ? AND tool_id = ?", (execution_id, tool_id))
        else:
            self._keep(
                "DELETE FROM process_groups WHERE execution_id = ? AND tool_id = ? AND terminator_id = ?",
                (execution_id, tool_id, terminator_id),
            )

    # -- the restart -----------------------------------------------------------

    def load(self) -> list[JournaledExecution]:
        """Everything not forgotten, oldest first (parents before their children)."""
        try:
            groups: dict[str, list[JournaledGroup]] = {}
            for row in self._db.execute(
                "SELECT execution_id, tool_id, terminator_id, pgid, leader_start, session, signal, kill_after_ns "
                "FROM process_groups ORDER BY rowid"
            ):
                groups.setdefault(row[0], []).append(JournaledGroup(*row[1:]))
            found = []
            for row in self._db.execute(
                "SELECT execution_id, spec, token_id, token_digest, begun_wall_ns, held, trip_reason, trip_detail, "
                "trip_wall_ns, ended FROM executions ORDER BY begun_wall_ns, rowid"
            ):
                found.append(
                    JournaledExecution(
                        execution_id=row[0],
                        spec=self._json_loads(row[1]),
                        token_id=row[2],
                        token_digest=bytes(row[3]),
                        begun_wall_ns=row[4],
                        held=bool(row[5]),
                        trip_reason=row[6],
                        trip_detail=row[7] or "",
                        trip_wall_ns=row[8],
                        ended=bool(row[9]),
                        groups=groups.get(row[0], []),
                    )
                )
            return found
        except (self._database_error, ValueError) as err:
            raise JournalError(f"cannot read the journal {self.path}: {err}") from err
