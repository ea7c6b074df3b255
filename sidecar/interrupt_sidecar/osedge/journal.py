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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from interrupt_sidecar.errors import SidecarError

if TYPE_CHECKING:
    import sqlite3

SCHEMA_VERSION = 1

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


@dataclass(frozen=True, slots=True)
class JournaledGroup:
    tool_id: str
    terminator_id: str
    pgid: int
    leader_start: int | None
    session: int | None
    signal: int
    kill_after_ns: int | None


@dataclass(frozen=True, slots=True)
class JournaledExecution:
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
    groups: list[JournaledGroup] = field(default_factory=list)


class Journal:
    """One SQLite database under ``--state-dir``. Used from the event-loop thread only."""

    def __init__(self, path: Path) -> None:
        # Imported here: a daemon without --state-dir never opens a journal, and sqlite3
        # is about 1 MiB of its idle memory.
        import sqlite3

        self.path = path
        self._database_error: type[sqlite3.DatabaseError] = sqlite3.DatabaseError
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

    def close(self) -> None:
        self._db.close()

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
        self._db.execute(
            "INSERT OR REPLACE INTO executions (execution_id, spec, token_id, token_digest, begun_wall_ns, held) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (execution_id, json.dumps(spec, sort_keys=True), token_id, token_digest, begun_wall_ns, int(held)),
        )

    def held(self, execution_id: str) -> None:
        self._db.execute("UPDATE executions SET held = 1 WHERE execution_id = ?", (execution_id,))

    def tripped(self, execution_id: str, reason: int, detail: str, wall_ns: int) -> None:
        self._db.execute(
            "UPDATE executions SET trip_reason = ?, trip_detail = ?, trip_wall_ns = ? "
            "WHERE execution_id = ? AND trip_reason IS NULL",
            (reason, detail, wall_ns, execution_id),
        )

    def ended(self, execution_id: str) -> None:
        self._db.execute("UPDATE executions SET ended = 1 WHERE execution_id = ?", (execution_id,))

    def forget(self, execution_id: str) -> None:
        """Nothing more can happen to this execution: drop it and its groups."""
        self._db.execute("DELETE FROM process_groups WHERE execution_id = ?", (execution_id,))
        self._db.execute("DELETE FROM executions WHERE execution_id = ?", (execution_id,))

    def group_registered(self, execution_id: str, group: JournaledGroup) -> None:
        self._db.execute(
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
            self._db.execute(
                "DELETE FROM process_groups WHERE execution_id = ? AND tool_id = ?", (execution_id, tool_id)
            )
        else:
            self._db.execute(
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
                        spec=json.loads(row[1]),
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
