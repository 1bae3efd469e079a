"""Layers with the names and arguments of Fluid's `fluid.layers`, for the ops
Rill has. Each appends to the current program (see rill.program_guard) through
Rill's Builder and returns a rill.Variable; shapes are inferred as each op is
appended, so a mismatch raises at the line that made it.
"""
import contextlib

import numpy as np

from rill.framework import Variable, current_builder


def _dtype_name(dtype):
    return np.dtype(dtype).name


def _var_or_none(x):
    """The builder Var of an optional layer input."""
    return x._var if x is not None else None


def _wrap(var, builder):
    return Variable(var, builder)


def data(name, shape, append_batch_size=True, dtype="float32"):
    """A fed input `name` of `shape`; with append_batch_size a batch dimension
    (-1) goes first. No gradient flows into it."""
    shape = list(shape)
    if append_batch_size:
        shape = [-1] + shape
    builder = current_builder()
    return _wrap(builder.data(name, shape, _dtype_name(dtype)), builder)


def fc(input, size, num_flatten_dims=1, act=None):
    """A fully connected layer: `input` flattened after num_flatten_dims dims,
    times a [in, size] weight (Xavier-uniform), plus a zero-initialised bias,
    then `act` ("relu", "sigmoid", "tanh", "softmax" or None)."""
    return _wrap(input.builder.fc(input._var, size, act or "", num_flatten_dims), input.builder)


def _activation(x, act):
    return _wrap(x.builder.activate(x._var, act), x.builder)


def relu(x):
    """max(x, 0) elementwise."""
    return _activation(x, "relu")


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise."""
    return _activation(x, "sigmoid")


def tanh(x):
    """tanh(x) elementwise."""
    return _activation(x, "tanh")


def softmax(input, axis=-1, mask=None):
    """Softmax along `axis` (-1: the last dimension; negative counts from the
    end). With `mask` (input's dtype, broadcasting to input: its dimensions
    aligned to input's last ones, each 1 or input's, e.g. [B, 1, 1, T] for
    attention scores [B, H, T, T]), elements whose mask is 0 get probability
    0 and a row masked everywhere is all zeros; no gradient flows into it."""
    if mask is not None:
        return _wrap(input.builder.masked_softmax(input._var, mask._var, axis), input.builder)
    if axis == -1:
        return _activation(input, "softmax")
    return _wrap(input.builder.softmax(input._var, axis), input.builder)


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0):
    """alpha * x @ y over the last two dimensions (transposed first when
    asked); the leading dimensions broadcast as numpy's matmul, e.g.
    [B, H, T, D] @ [B, H, D, T] or [B, T, D] @ [D, E]."""
    return _wrap(x.builder.matmul(x._var, y._var, transpose_x, transpose_y, alpha), x.builder)


def gelu(x):
    """0.5 * x * (1 + erf(x / sqrt(2))) elementwise (the exact form, Fluid's default)."""
    return _activation(x, "gelu")


def batch_norm(input, act=None, momentum=0.9, epsilon=1e-05, sync=False):
    """Batch normalisation over the channels (dim 1) of [N, C] or NCHW `input`:
    a trained scale (1) and bias (0), and a running mean (0) and variance (1),
    persistable and not trained, that training moves towards each batch's
    statistics with `momentum`. Program.clone(for_test=True) normalises with
    the running statistics. Then `act`.

    On several places (ParallelExecutor) each place normalises its own slice
    of the batch, as Fluid and PyTorch DDP do by default; with `sync` every
    place normalises with the whole batch's statistics (sync_batch_norm: the
    places' sums are merged in the forward and the backward pass)."""
    return _wrap(input.builder.batch_norm(input._var, act or "", momentum, epsilon, sync),
                 input.builder)


def layer_norm(input, begin_norm_axis=1, epsilon=1e-05):
    """Each row of `input` (the dimensions from begin_norm_axis on) normalised
    to zero mean and unit variance, times a trained scale (1) plus a trained
    bias (0) per element of a row."""
    return _wrap(input.builder.layer_norm(input._var, begin_norm_axis, epsilon), input.builder)


def cross_entropy(input, label):
    """-log(input[label]) per row of probabilities `input`, int64 labels [N, 1]."""
    return _wrap(input.builder.cross_entropy(input._var, label._var), input.builder)


def softmax_with_cross_entropy(logits, label):
    """The per-example loss [N, 1] of unnormalised `logits` and int64 labels [N, 1]."""
    return _wrap(logits.builder.softmax_with_cross_entropy(logits._var, label._var), logits.builder)


def mean(x):
    """The mean of all elements of `x`: a [1] variable."""
    return _wrap(x.builder.mean(x._var), x.builder)


def accuracy(input, label, k=1):
    """Top-k accuracy of predictions [N, C] against int64 labels [N, 1]: a [1] float."""
    return _wrap(input.builder.accuracy(input._var, label._var, k), input.builder)


def _elementwise(method, x, y, axis):
    return _wrap(getattr(x.builder, method)(x._var, y._var, axis), x.builder)


def elementwise_add(x, y, axis=-1):
    """x + y, y broadcast from dimension `axis` of x (-1: aligned to x's last dims)."""
    return _elementwise("add", x, y, axis)


def elementwise_sub(x, y, axis=-1):
    """x - y, broadcast as elementwise_add."""
    return _elementwise("sub", x, y, axis)


def elementwise_mul(x, y, axis=-1):
    """x * y, broadcast as elementwise_add."""
    return _elementwise("mul", x, y, axis)


def elementwise_div(x, y, axis=-1):
    """x / y, broadcast as elementwise_add."""
    return _elementwise("div", x, y, axis)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, groups=None, act=None):
    """A 2-D convolution of NCHW `input` with num_filters square filters of
    filter_size (Xavier-uniform), plus a zero-initialised bias, then `act`."""
    return _wrap(input.builder.conv2d(input._var, num_filters, filter_size, stride, padding,
                                      act or "", groups or 1), input.builder)


def pool2d(input, pool_size, pool_type="max", pool_stride=1, pool_padding=0):
    """Square pooling windows ("max" or "avg") over NCHW `input`."""
    return _wrap(input.builder.pool2d(input._var, pool_size, pool_type, pool_stride, pool_padding),
                 input.builder)


def dropout(x, dropout_prob):
    """Zeroes each element with probability dropout_prob while training (the
    kept ones scaled by 1 / (1 - dropout_prob)); Program.clone(for_test=True)
    turns it off."""
    return _wrap(x.builder.dropout(x._var, dropout_prob), x.builder)


def embedding(input, size, is_sparse=False, dtype="float32"):
    """Rows of a [size[0], size[1]] table picked by int64 ids; with is_sparse
    the table's gradient holds only the looked-up rows."""
    vocab, dim = size
    return _wrap(input.builder.embedding(input._var, vocab, dim, _dtype_name(dtype), is_sparse),
                 input.builder)


def _rnn_form(fused, form):
    return form if form is not None else ("fused" if fused else "unrolled")


def lstm(input, size, length=None, fused=True, form=None):
    """An LSTM over input [N, T, D] (known T, D) with `size` hidden units:
    returns (out [N, T, size], last_hidden [N, size], last_cell [N, size]).
    `length` (int64 [N], each sequence's steps, sequences padded to T): steps
    past a sequence's length keep its state and output zeros. form: "fused"
    (one op over the whole sequence), "unrolled" (the cells unrolled into
    matmul and elementwise ops) or "while" (those ops as the body of a While
    loop over the steps); the same numbers. fused=False means "unrolled"."""
    b = input.builder
    out, last_h, last_c = b.lstm(input._var, size, _rnn_form(fused, form), _var_or_none(length))
    return _wrap(out, b), _wrap(last_h, b), _wrap(last_c, b)


def gru(input, size, length=None, fused=True, form=None):
    """A GRU over input [N, T, D], as lstm: returns (out [N, T, size],
    last_hidden [N, size])."""
    b = input.builder
    out, last_h = b.gru(input._var, size, _rnn_form(fused, form), _var_or_none(length))
    return _wrap(out, b), _wrap(last_h, b)


def sequence_mask(x, maxlen, dtype="float32"):
    """[N, maxlen]: 1 where step t < x[n] (int64 [N] lengths), else 0."""
    return _wrap(x.builder.sequence_mask(x._var, maxlen, _dtype_name(dtype)), x.builder)


def multi_head_attention(input, num_heads, key_mask=None):
    """Multi-head self-attention over input [N, T, E] (E divisible by
    num_heads): query, key and value projections, softmax(q k^T / sqrt(E/H))
    over the keys (only where key_mask, broadcasting to [N, H, T, T], is
    non-zero), times the values, heads merged, an output projection."""
    b = input.builder
    return _wrap(b.multi_head_self_attention(input._var, num_heads, _var_or_none(key_mask)), b)


def transformer_encoder_layer(input, num_heads, ffn_hidden, dropout=0.0, key_mask=None):
    """A pre-norm Transformer encoder layer on input [N, T, E]:
    h = x + dropout(attention(layer_norm(x))), out = h + dropout(fc(gelu(fc(
    layer_norm(h), ffn_hidden)), E))."""
    b = input.builder
    return _wrap(b.transformer_encoder_layer(input._var, num_heads, ffn_hidden, dropout,
                                             _var_or_none(key_mask)), b)


def reshape(x, shape):
    """The same elements in `shape` (one dimension may be -1)."""
    return _wrap(x.builder.reshape(x._var, list(shape)), x.builder)


def concat(input, axis=0):
    """The variables of the list `input` joined along `axis`."""
    builder = input[0].builder
    return _wrap(builder.concat([v._var for v in input], axis), builder)


def split(input, num_or_sections, dim=-1):
    """`input` cut into num_or_sections equal parts along `dim` (an int: Rill
    has no uneven sections)."""
    if not isinstance(num_or_sections, int):
        raise TypeError("split: num_or_sections must be an int (Rill splits into equal parts)")
    parts = input.builder.split(input._var, num_or_sections, dim)
    return [_wrap(part, input.builder) for part in parts]


def transpose(x, perm):
    """x with its dimensions permuted: output dim i is input dim perm[i]."""
    return _wrap(x.builder.transpose(x._var, list(perm)), x.builder)


def scale(x, scale=1.0, bias=0.0):
    """scale * x + bias elementwise."""
    return _wrap(x.builder.scale(x._var, scale, bias), x.builder)


def append_op(type, inputs, outputs, attrs=None):
    """Appends an op of any registered type, a plugin's too (rill.load_plugin),
    to the current program. `inputs` maps each input slot to a Variable or a
    list of them; `outputs` maps each output slot to how many variables it
    gets (fresh ones, named "<type>_N.<slot>", shapes inferred by the op);
    `attrs` maps names to bools, ints, floats, strings or lists of them.
    Returns the outputs as one Variable when there is one, else a list in
    slot order.

        out = layers.append_op("cube", inputs={"X": x}, outputs={"Out": 1})
    """
    slots = [(slot, [v._var for v in (value if isinstance(value, (list, tuple)) else [value])])
             for slot, value in inputs.items()]
    variables = [v for value in inputs.values()
                 for v in (value if isinstance(value, (list, tuple)) else [value])]
    builder = variables[0].builder if variables else current_builder()
    made = builder.append_op(type, slots, list(outputs.items()), list((attrs or {}).items()))
    made = [_wrap(var, builder) for var in made]
    return made[0] if len(made) == 1 else made


# -- control flow: loops, go blocks, channels (Fluid's While, Go, make_channel) --


def fill_constant(shape, dtype, value):
    """A variable of `shape` filled with `value` (set by the main program each
    time it runs, so a loop's counter starts over every step)."""
    builder = current_builder()
    return _wrap(builder.constant(list(shape), float(value), _dtype_name(dtype)), builder)


def assign(input, output):
    """output = input, for an existing `output` (a loop-carried variable)."""
    input.builder.assign(input._var, output._var)
    return output


def less_than(x, y, cond=None):
    """int32 1 where x < y, else 0 (y: x's shape or one element); into `cond`
    when given (a loop's condition), else a new variable."""
    out = _wrap(x.builder.less_than(x._var, y._var), x.builder)
    return assign(out, cond) if cond is not None else out


def increment(x, value=1.0, in_place=True):
    """x + value (x: one element of any type, a loop's counter); with
    in_place (Fluid's default) written back to x, else a new float
    variable."""
    if in_place:
        x.builder.increment(x._var, float(value))
        return x
    return scale(x, 1.0, value)


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0,
                                  output_dim_idx=0):
    """A variable of `shape` filled with `value` whose dim output_dim_idx is
    input's dim input_dim_idx when the program runs (a loop's zero state for
    a batch of any size)."""
    b = input.builder
    return _wrap(b.constant_batch_size_like(input._var, list(shape), float(value),
                                            _dtype_name(dtype), input_dim_idx, output_dim_idx), b)


def read_step(x, index, axis=1):
    """Step `index` (one int element, a loop's counter) of x along `axis`."""
    return _wrap(x.builder.read_step(x._var, index._var, axis), x.builder)


def write_step(x, value, index, axis=1):
    """Writes `value` as step `index` of x along `axis`, in place; returns x."""
    x.builder.write_step(x._var, value._var, index._var, axis)
    return x


class _SubBlock:
    """Opens a sub-block of the current block for the ops appended inside a
    `with`, then appends the op that runs it (when the body raised nothing)."""

    def __init__(self, builder, append):
        self._builder = builder
        self._append = append

    def __enter__(self):
        self._index = self._builder.open_sub_block()
        return self

    def __exit__(self, kind, value, traceback):
        self._builder.close_sub_block(self._index)
        if kind is None:
            self._append(self._index)
        return False


class While:
    """Fluid's While: the ops appended inside `with loop.block():` run while
    `cond` (one element, e.g. from less_than) is non-zero; the body updates it.

        i = layers.fill_constant([1], "float32", 0)
        limit = layers.fill_constant([1], "float32", 10)
        cond = layers.less_than(i, limit)
        loop = layers.While(cond)
        with loop.block():
            layers.increment(i)
            layers.less_than(i, limit, cond=cond)
    """

    def __init__(self, cond):
        self.cond = cond

    def block(self):
        builder = self.cond.builder
        return _SubBlock(builder, lambda index: builder.while_op(self.cond._var, index))


class Go(_SubBlock):
    """Fluid's Go: `with layers.Go():` runs the ops appended inside
    concurrently with the rest of the block (a go op; it may outlive the block
    only as long as the run)."""

    def __init__(self):
        builder = current_builder()
        super().__init__(builder, builder.go_op)


class ParallelDo:
    """Fluid's ParallelDo: the ops appended inside `with pd.do():` run on
    `places` places (a count), each on its slice (along the batch) of the
    inputs it reads through pd.read_input; what pd.write_output names comes
    back, the places' slices concatenated, from pd(). Parameters made inside
    are shared by the places. Runs on the actor executor (ParallelExecutor).

        pd = layers.ParallelDo(2)
        with pd.do():
            h = layers.fc(pd.read_input(x), size=10)
            pd.write_output(h)
        out = pd()
    """

    def __init__(self, places):
        self._places = int(places)
        self._inputs, self._outputs, self._results = [], [], None

    def do(self):
        builder = current_builder()

        def append(index):
            made = builder.parallel_do_op(self._places, [v._var for v in self._inputs], index,
                                          [v._var for v in self._outputs])
            self._results = [_wrap(var, builder) for var in made]

        return _SubBlock(builder, append)

    def read_input(self, var):
        """`var`, read by each place as its slice."""
        self._inputs.append(var)
        return var

    def write_output(self, var):
        """Returns `var` (a variable of the block) from the places, concatenated."""
        self._outputs.append(var)

    def __call__(self):
        if self._results is None:
            raise RuntimeError("ParallelDo: call it after its `with pd.do():` block")
        return self._results[0] if len(self._results) == 1 else self._results


class Select:
    """Fluid's Select: of its cases, the first whose channel can go on runs
    (or `default` when none can), once.

        with layers.Select() as select:
            with select.case(layers.channel_recv, ch) as (value, ok):
                layers.assign(value, got)
            with select.case(layers.channel_send, out, x):
                pass
            with select.default():
                layers.assign(minus_one, got)

    A receive case gives the received value and its status (1, or 0 when the
    channel is closed) to its block."""

    def __enter__(self):
        self._builder = current_builder()
        self._cases = []
        return self

    def case(self, action, channel, value=None):
        """A case that receives from `channel` (action layers.channel_recv;
        `with ... as (value, status)`) or sends `value` to it (channel_send)."""
        if action is channel_recv:
            out, status = self._builder.select_recv_vars(channel._var)
            return self._case("recv", channel._var, None, out, status)
        if action is channel_send:
            return self._case("send", channel._var, value._var, None, None)
        raise ValueError("Select.case takes layers.channel_recv or layers.channel_send")

    def default(self):
        """The case that runs when no other can go on."""
        return self._case("default", None, None, None, None)

    @contextlib.contextmanager
    def _case(self, kind, channel, value, out, status):
        index = self._builder.open_sub_block()
        try:
            if kind == "recv":
                yield _wrap(out, self._builder), _wrap(status, self._builder)
            else:
                yield None
        finally:
            self._builder.close_sub_block(index)
        self._cases.append((kind, channel, value, out, status, index))

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self._builder.select_op(self._cases)
        return False


def make_channel(shape, dtype="float32", capacity=0):
    """A channel of `capacity` buffered values of `shape` (-1: any size) and
    `dtype`; 0: unbuffered (a send waits for its receive)."""
    builder = current_builder()
    return _wrap(builder.make_channel(list(shape), _dtype_name(dtype), capacity), builder)


def channel_send(channel, value):
    """Sends `value` (waits while the channel is full)."""
    channel.builder.channel_send(channel._var, value._var)


def channel_recv(channel, return_value=None, status=None):
    """Receives the next value: (value, status), status int32 [1]: 1 for a
    value, 0 once the channel is closed and drained. Into `return_value` and
    `status` when given (a loop's next value and condition)."""
    if return_value is not None and status is not None:
        channel.builder.channel_recv_into(channel._var, return_value._var, status._var)
        return return_value, status
    value, ok = channel.builder.channel_recv(channel._var)
    return _wrap(value, channel.builder), _wrap(ok, channel.builder)


def channel_close(channel):
    """Closes the channel: receives drain it, then get status 0."""
    channel.builder.channel_close(channel._var)
