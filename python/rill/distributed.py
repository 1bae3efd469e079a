"""Collective data parallelism across processes: a process group.

Every process (a rank) holds the whole model and trains on its share of each
global batch; the gradients are averaged over the ranks (Gloo's ring
allreduce) before the optimizer, as `rill train --collective` does:

    group = rill.distributed.ProcessGroup.from_environment()  # RILL_RANK, ...
    exe = rill.ParallelExecutor(main, places="cpu", process_group=group)
    exe.run(feed={"x": my_rows, ...}, fetch_list=[loss])

Rank 0 holds the rendezvous store at `master` ("host:port"); every connection
to it proves the job's `token` first. Every wait ends: a rank that never comes
fails the rendezvous after `timeout_ms`, a wrong token fails at once, and a
rank that dies or goes silent (no heartbeat for `peer_timeout_ms`) fails the
others' collectives naming it. The calls that wait release the GIL. A rank
leaves when its ProcessGroup is closed or collected, after waiting for every
rank to get there (so that no rank leaves another's last allreduce behind).
"""
from rill import _core


class ProcessGroup:
    """One rank of a collective job: `rank` in [0, world_size), rank 0's store
    at `master` (rank 0 listens there; port 0: any free port, see
    master_port)."""

    def __init__(self, rank, world_size, master="127.0.0.1:0", token="", timeout_ms=30000,
                 heartbeat_ms=1000, peer_timeout_ms=5000, bind_host="127.0.0.1"):
        self._group = _core.ProcessGroup(rank, world_size, master, token, timeout_ms,
                                         heartbeat_ms, peer_timeout_ms, bind_host)

    @classmethod
    def from_environment(cls, timeout_ms=30000):
        """Joins from RILL_RANK, RILL_WORLD_SIZE, RILL_MASTER, RILL_TOKEN and
        RILL_BIND_HOST (optional), as `rill launch --collective` sets them."""
        group = cls.__new__(cls)
        group._group = _core.ProcessGroup.from_environment(timeout_ms)
        return group

    @property
    def rank(self):
        return self._group.rank

    @property
    def world_size(self):
        return self._group.world_size

    @property
    def master_port(self):
        """Rank 0: the port its rendezvous store listens on."""
        return self._group.master_port

    def allreduce(self, array):
        """The sum over the ranks of a float32 or float64 array (a new array;
        the same bits on every rank). Every rank calls it, in the same order
        as its other collectives."""
        return self._group.allreduce(array)

    def broadcast(self, array, root=0):
        """Rank `root`'s array (same shape and dtype on every rank), as a new
        array on every rank."""
        return self._group.broadcast(array, root)

    def close(self):
        """Done with the group: waits (up to timeout_ms, without the GIL) for
        every rank to close, then leaves; later collectives raise. Called when
        the object is collected, or at the end of a `with` block."""
        group = getattr(self, "_group", None)
        if group is not None:
            group.finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # Collected while the executor or scope may still hold the C++ group:
        # its destructor would then wait for the other ranks holding the GIL.
        self.close()

    def __repr__(self):
        return "<rill.distributed.ProcessGroup %s>" % self._group.describe()
