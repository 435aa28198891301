"""tf.logging governs zmtf's loggers as TF1's governs TensorFlow's: a TF1 script that calls
``tf.logging.set_verbosity(tf.logging.INFO)`` sees its hooks' lines on stderr (and nothing at
the default WARN), each once even with ``logging.basicConfig``; TF1's helpers work."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import logging, sys
    import zmtf as tf
    if "basic" in sys.argv:
        logging.basicConfig(format="ROOT %(levelname)s %(name)s %(message)s")
    if "info" in sys.argv:
        tf.logging.set_verbosity(tf.logging.INFO)
    print("verbosity", tf.logging.get_verbosity())
    step = tf.train.get_or_create_global_step()
    loss = tf.constant(2.5)
    train = step.assign_add(1)
    hooks = [tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=2),
             tf.train.StopAtStepHook(last_step=4)]
    with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train)
    for i in range(5):
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
    tf.logging.vlog(tf.logging.INFO, "vlog line")
    tf.logging.info("info %s", "line")
    tf.logging.warning("a warning")
''')


def run(script, *modes):
    return subprocess.Popen([sys.executable, str(script), *modes], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_verbosity_governs_zmtf_and_tensorflow_loggers(tmp_path):
    # written once, before any process reads it (rewriting it for each process truncated
    # it under one that was still reading: it then ran an empty script)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    default, info, basic = run(script), run(script, "info"), run(script, "info", "basic")
    out, err = default.communicate(timeout=120)
    assert default.returncode == 0, err
    assert out.strip() == "verbosity 30"   # TF1's default: WARN
    assert err.splitlines() == ["WARNING:tensorflow:a warning"]

    out, err = info.communicate(timeout=120)
    assert info.returncode == 0, err
    assert out.strip() == "verbosity 20"
    lines = err.splitlines()
    hook_lines = [line for line in lines if line.startswith("INFO:zmtf.train:loss = 2.5")]
    assert len(hook_lines) == 2, err   # iterations 0 and 2 of 4 (every_n_iter=2)
    tf_lines = [line for line in lines if ":tensorflow:" in line]
    assert tf_lines == ["INFO:tensorflow:every 0", "INFO:tensorflow:first 0", "INFO:tensorflow:first 1",
                        "INFO:tensorflow:every 2", "INFO:tensorflow:every 4", "INFO:tensorflow:vlog line",
                        "INFO:tensorflow:info line", "WARNING:tensorflow:a warning"]

    out, err = basic.communicate(timeout=120)   # the root's handler prints each line, once
    assert basic.returncode == 0, err
    lines = err.splitlines()
    assert len([line for line in lines if line.startswith("ROOT INFO zmtf.train loss = 2.5")]) == 2, err
    assert lines.count("ROOT WARNING tensorflow a warning") == 1, err
    assert not any(line.startswith(("INFO:", "WARNING:")) for line in lines), err
