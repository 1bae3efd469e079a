"""Training across processes: a collective process group, or parameter
servers (a trainer and a server role, as `rill train --role trainer` and
`rill pserver` run them).

Parameter servers: the optimizer's updates go into a placeable block
(`SGD(..., placeable=True)`), the DistributeTranspiler splits the program
into a trainer program (forward, backward, send the gradients, receive the
parameters) and one program per server (the updates of its parameters), and
each process runs its role, reading the job from the environment as the CLI
does (role_from_environment: RILL_ROLE, RILL_TRAINER_ID, RILL_TRAINERS,
RILL_PSERVERS, RILL_SERVER_INDEX, RILL_TOKEN):

    t = rill.distributed.DistributeTranspiler()
    t.transpile(role.trainer_id, program=main, startup_program=startup,
                pservers=role.pservers, trainers=role.trainers)
    if role.role == "pserver":
        endpoint = role.pservers[role.server_index]
        server = rill.distributed.ParameterServer(
            t.get_pserver_program(endpoint), t.get_startup_program(endpoint),
            endpoint, token=role.token)
        server.serve()                      # until every trainer said BYE
    else:
        scope = rill.Scope()
        rill.Executor().run(t.get_trainer_startup_program(), scope=scope)
        client = rill.distributed.TrainerClient(t.get_trainer_program(), scope,
                                                role.trainer_id, role.pservers,
                                                token=role.token)
        exe = rill.ParallelExecutor(t.get_trainer_program(), scope=scope)
        for step in range(client.start_step + 1, last_step + 1):
            client.set_step(step)           # the step its pushes carry
            exe.run(feed=my_rows_of_step(step), fetch_list=[loss])
        client.close()                      # BYE

Sync mode (the default) gives the numbers of one process training on the
global batch: each server applies the mean of every trainer's gradient.

Collective data parallelism: a process group.

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


class Role:
    """The job a process belongs to, as `rill launch` and the CLI's flags give
    it: `role` ("trainer", "pserver", or "" outside a job), `trainer_id`,
    `trainers`, `pservers` (a list of "host:port"), `server_index` and
    `token`."""

    def __init__(self, role="", trainer_id=-1, trainers=0, pservers=(), server_index=-1,
                 token=""):
        if role not in ("", "trainer", "pserver"):
            raise ValueError('role must be "trainer", "pserver" or "", not %r' % (role,))
        self.role = role
        self.trainer_id = trainer_id
        self.trainers = trainers
        self.pservers = list(pservers)
        self.server_index = server_index
        self.token = token

    def __repr__(self):
        return ("Role(role=%r, trainer_id=%d, trainers=%d, pservers=%r, server_index=%d)"
                % (self.role, self.trainer_id, self.trainers, self.pservers, self.server_index))


def role_from_environment(environ=None):
    """The Role of this process from RILL_ROLE, RILL_TRAINER_ID, RILL_TRAINERS,
    RILL_PSERVERS (comma-separated host:port), RILL_SERVER_INDEX and
    RILL_TOKEN (the variables `rill train` and `rill pserver` read when their
    flags are not given). Raises ValueError naming a variable that is not a
    number."""
    import os
    env = os.environ if environ is None else environ

    def number(name, default):
        text = env.get(name, "")
        if text == "":
            return default
        try:
            return int(text)
        except ValueError:
            raise ValueError("%s=%r is not a number" % (name, text)) from None

    pservers = [p for p in env.get("RILL_PSERVERS", "").split(",") if p]
    return Role(env.get("RILL_ROLE", ""), number("RILL_TRAINER_ID", -1),
                number("RILL_TRAINERS", 0), pservers, number("RILL_SERVER_INDEX", -1),
                env.get("RILL_TOKEN", ""))


def _endpoints(pservers):
    if isinstance(pservers, str):
        return [p for p in pservers.split(",") if p]
    return list(pservers)


class DistributeTranspiler:
    """Fluid's DistributeTranspiler over Rill's (rill/transpiler.h): splits a
    program whose optimizer is placeable into the trainers' and the servers'
    programs. Parameters are spread over the servers; a large one is cut by
    rows into one slice per server (at least `min_slice_rows` rows and
    `min_slice_elements` elements each). A trainer's gradients for one server
    leave in frames of up to `send_fuse_bytes` (0: a frame per gradient)."""

    def __init__(self, min_slice_rows=8, min_slice_elements=8192, send_fuse_bytes=256 * 1024):
        self._min_slice_rows = min_slice_rows
        self._min_slice_elements = min_slice_elements
        self._send_fuse_bytes = send_fuse_bytes
        self._result = None
        self.trainer_id = 0

    def transpile(self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1,
                  sync_mode=True, startup_program=None):
        """Splits `program` (default: the default main program) and
        `startup_program` (default: the default startup program) for
        `trainers` trainers and the servers at `pservers` ("host:port,..." or a
        list). Raises rill.InvalidArgumentError naming the cause (no placeable
        block, a malformed endpoint, ...)."""
        from rill.framework import default_main_program, default_startup_program
        program = program if program is not None else default_main_program()
        startup = startup_program if startup_program is not None else default_startup_program()
        self._result = _core.transpile(program, startup, trainers, _endpoints(pservers),
                                       sync_mode, self._min_slice_rows,
                                       self._min_slice_elements, self._send_fuse_bytes)
        self.trainer_id = trainer_id

    def _done(self):
        if self._result is None:
            raise RuntimeError("call transpile() first")
        return self._result

    def get_trainer_program(self):
        """Forward, backward, the gradients sent and the parameters received."""
        return self._done()["trainer_main"]

    def get_trainer_startup_program(self):
        """What a trainer runs once before its first step."""
        return self._done()["trainer_startup"]

    def _server(self, endpoint):
        for at, main, startup in self._done()["servers"]:
            if at == endpoint:
                return main, startup
        raise ValueError("no server at %r (the servers: %s)"
                         % (endpoint, ", ".join(s[0] for s in self._done()["servers"])))

    def get_pserver_program(self, endpoint):
        """The program of the server at `endpoint`: its parameters' updates."""
        return self._server(endpoint)[0]

    def get_startup_program(self, endpoint, pserver_program=None):
        """The startup program of the server at `endpoint` (pserver_program is
        accepted for Fluid's signature and not needed)."""
        return self._server(endpoint)[1]

    def summary(self):
        """One line per parameter or slice (shape, elements, server), then each
        server's total, as `rill transpile` prints."""
        return self._done()["summary"]


class ParameterServer:
    """Serves one server program: listens on `endpoint` (port 0: any free port,
    see `port`) bound to `bind`, proves `token` with every trainer's
    connection, applies the updates (in sync mode once every trainer's gradient
    for the step arrived). With `checkpoint` it saves its variables every
    `checkpoint_every` steps, and a restarted job goes on from the newest step
    every server has. A trainer that dies or goes silent past
    `peer_timeout_ms`, or trainers that do not all come within
    `connect_timeout_ms`, end serve() with an error naming them."""

    def __init__(self, program, startup_program, endpoint, token="", bind="127.0.0.1",
                 checkpoint="", checkpoint_every=0, heartbeat_ms=500, peer_timeout_ms=5000,
                 connect_timeout_ms=60000, max_message_mb=256, threads=2):
        self._server = _core.ParameterServer(program, startup_program, endpoint, bind, token,
                                             checkpoint or "", checkpoint_every, heartbeat_ms,
                                             peer_timeout_ms, connect_timeout_ms,
                                             max_message_mb, threads)

    @property
    def port(self):
        """The port it listens on."""
        return self._server.port

    @property
    def step(self):
        """Steps completed (every update applied), the step started from included."""
        return self._server.step

    @property
    def start_steps(self):
        """The steps it can start from, newest first (its checkpoints, and 0)."""
        return self._server.start_steps

    def serve(self):
        """Serves until every trainer said BYE (the GIL released meanwhile)."""
        self._server.serve()


class TrainerClient:
    """A trainer's links to its parameter servers: connects to every one of
    `pservers` (retrying for `connect_timeout_ms`, as servers may start later),
    pulls the parameters the trainer program starts from into `scope`, and
    installs itself in `scope`, where the program's send and recv ops find it.
    Before each step, set_step(step) says which step its pushes carry: from
    start_step + 1 on. A server that dies or goes silent past
    `peer_timeout_ms` fails the step with an error naming it.
    `gradient_compression` ("none", "int8", "int4") quantizes large gradients
    on the wire, with error feedback. close() (or the end of a `with` block)
    says BYE."""

    def __init__(self, program, scope, trainer_id, pservers, token="", heartbeat_ms=500,
                 peer_timeout_ms=5000, connect_timeout_ms=30000, max_message_mb=256,
                 last_step=0, gradient_compression="none", threads=1):
        self._closed = True  # until connected: nothing to close if the constructor raises
        self._client = _core.TrainerClient(program, scope, trainer_id, _endpoints(pservers),
                                           token, heartbeat_ms, peer_timeout_ms,
                                           connect_timeout_ms, max_message_mb, last_step,
                                           gradient_compression, threads)
        self._closed = False

    @property
    def start_step(self):
        """The step the servers started from (0, or a checkpoint's)."""
        return self._client.start_step

    @property
    def step(self):
        return self._client.step

    def set_step(self, step):
        """The step the next run's pushes carry."""
        self._client.set_step(step)

    def counters(self):
        """Steps, gradient bytes pushed (as float32 and as sent), and the seconds
        the send ops spent pushing and the recv ops waiting for parameters."""
        return self._client.counters()

    def close(self):
        """Says BYE to every server (once). Also when the object is collected,
        so that a script that ends without close() lets its servers finish."""
        if not getattr(self, "_closed", True):
            self._closed = True
            self._client.finish()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<rill.distributed.TrainerClient %s>" % self._client.describe()
