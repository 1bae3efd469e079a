"""Fashion-MNIST's MLP trained by 2 trainers and 1 parameter server, each a
process running this file in the role the environment gives it (RILL_ROLE,
RILL_TRAINER_ID, RILL_TRAINERS, RILL_PSERVERS, RILL_SERVER_INDEX, RILL_TOKEN:
the variables of `rill train` and `rill pserver`). Started without RILL_ROLE
it starts the job's three processes itself on loopback. Sync SGD: the
numbers of one process on the global batch. EPOCHS (1), BATCH (64 per
trainer). Run with the build's package:
    PYTHONPATH=build/python python3 examples/python/fashion_mnist_pserver.py
"""
import os
import secrets
import socket
import subprocess
import sys

import numpy as np
import rill
from rill import layers

env = lambda name, default: type(default)(os.environ.get(name, default))
EPOCHS, BATCH = env("EPOCHS", 1), env("BATCH", 64)


def launch(trainers=2):  # this file again, once per role, on free loopback ports
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        job = {"RILL_TRAINERS": str(trainers), "RILL_TOKEN": secrets.token_hex(16),
               "RILL_PSERVERS": "127.0.0.1:%d" % s.getsockname()[1]}
    roles = [{"RILL_ROLE": "pserver", "RILL_SERVER_INDEX": "0"}] + [
        {"RILL_ROLE": "trainer", "RILL_TRAINER_ID": str(i)} for i in range(trainers)]
    procs = [subprocess.Popen([sys.executable, __file__], env={**os.environ, **job, **r})
             for r in roles]
    sys.exit(max(p.wait() for p in procs[::-1]))


role = rill.distributed.role_from_environment()
if role.role == "":
    launch()
main, startup = rill.Program(), rill.Program()
with rill.program_guard(main, startup):
    image = layers.data("image", shape=[784])
    label = layers.data("label", shape=[1], dtype="int64")
    logits = layers.fc(layers.fc(layers.fc(image, 256, act="relu"), 128, act="relu"), 10)
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
    accuracy = layers.accuracy(layers.softmax(logits), label)
    evaluation = main.clone(for_test=True)
    rill.optimizer.SGD(learning_rate=0.1, placeable=True).minimize(loss)  # updates on the server
t = rill.distributed.DistributeTranspiler()
t.transpile(role.trainer_id, main, role.pservers, role.trainers, startup_program=startup)
if role.role == "pserver":
    at = role.pservers[role.server_index]
    rill.distributed.ParameterServer(t.get_pserver_program(at), t.get_startup_program(at), at,
                                     token=role.token).serve()  # until both trainers are done
    sys.exit(0)
scope = rill.Scope()
rill.Executor().run(t.get_trainer_startup_program(), scope=scope)
client = rill.distributed.TrainerClient(t.get_trainer_program(), scope, role.trainer_id,
                                        role.pservers, token=role.token)
train = rill.ParallelExecutor(t.get_trainer_program(), scope=scope)
test_x, test_y = next(rill.datasets.fashion_mnist(train=False, batch_size=10000, shuffle=False))
step, global_batch = client.start_step, BATCH * role.trainers
mine = slice(role.trainer_id * BATCH, (role.trainer_id + 1) * BATCH)  # my rows of each batch
for epoch in range(1, EPOCHS + 1):
    losses = []  # every trainer reads the same global batches (same seed), takes its rows
    for images, labels in rill.datasets.fashion_mnist(batch_size=global_batch, seed=0, epoch=epoch):
        if len(images) < global_batch:
            break  # the last, short batch: every trainer must take the same number of steps
        step += 1
        client.set_step(step)  # the step the pushes carry
        losses.append(train.run([loss], feed={"image": images[mine], "label": labels[mine]})[0][0])
    test = rill.Executor().run(evaluation, feed={"image": test_x, "label": test_y},
                               fetch_list=[accuracy], scope=scope)[0][0]
    print("trainer %d, epoch %d: train loss %.4f, test accuracy %.4f"
          % (role.trainer_id, epoch, np.mean(losses), test), flush=True)
client.close()
