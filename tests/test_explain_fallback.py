"""The fallback classifier, signature-id lookup, and explain's robustness on any input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3doctor.commands.explain import command
from k3doctor.explain.fallback import FALLBACK_PREFIX, parse_fallback_text
from k3doctor.explain.kb import KBError, load_kb
from k3doctor.explain.scan import Scanner

SCANNER = Scanner()


def run(args, input=None):
    return CliRunner().invoke(command, args, input=input)


def matches(text: str, prefilter: bool = False):
    return SCANNER.explain_bytes(text.encode("utf-8", "surrogateescape"), prefilter=prefilter).matches


# -- soft lines: notices are no answer on their own ----------------------------------------------
@pytest.mark.parametrize("line", [
    "INFO 05-14 04:44:37 [api_server.py:1034] Loading weights failed over to the slow path",
    "[rank0]:[W806 14:25:27.6 ProcessGroupGloo.cpp:524] Warning: Unable to resolve hostname to a "
    "(local) address. Using the loopback address as fallback.",
    "The server socket on [::ffff:10.4.6.125]:63617 has timed out, will retry.",
    "use_cache=True is incompatible with gradient checkpointing. Setting use_cache=False...",
    "[2026-01-30 20:54:50 PP0 TP1] Ignore import error when loading sglang.srt.models.x: No module named 'cuda'",
    "WARNING 02-06 00:09:43 arg_utils.py:1019] [DEPRECATED] Block manager v1 has been removed; the flag is deprecated!",
    # near misses of the round-9 hard markers (undefined symbol, OOM): the words in a notice, or
    # the title without them
    "INFO 05-14 04:44:37 [loader.py:12] resolved the undefined symbol table from the cache",
    "INFO 05-14 04:44:37 [gpu_worker.py:492] If OOM'ed, check the difference of initial free memory",
    "[Bug] main branch fail to start due to sgl-kernel import",
    "[Bug]: slow decoding during sampler warmup with DeepSeek-V3.2 (DeepGEMM) on vLLM Nightly",
    # near misses of the twelfth session's changes: a settings dump (upper-case keys) stays a
    # setting, and glog's and TensorRT-LLM's warning levels stay warnings
    "TIMEOUT(ms): 600000",
    "W20260821 12:30:19.435154 qqzzy.cpp:209] Failed to open qqzzy device on port 1, retrying",
    "[06/10/2025-02:50:21] [TRT-LLM] [W] Failed to initialize the optional qqzzy profiler",
])
@pytest.mark.parametrize("prefilter", [False, True])
def test_a_notice_alone_is_not_reported_as_an_error(line, prefilter):
    assert all(m.benign for m in matches(line, prefilter)), [m.sig.id for m in matches(line, prefilter)]


def test_a_soft_signature_line_counts_when_an_error_line_is_beside_it():
    notice = ("[rank7]:[W806 14:25:27.6 ProcessGroupGloo.cpp:524] Warning: Unable to resolve hostname to a "
              "(local) address. Using the loopback address as fallback. Manually set the network "
              "interface to bind to with GLOO_SOCKET_IFNAME.")
    assert not matches(notice)
    ids = [m.sig.id for m in matches(notice + "\nRuntimeError: worker exited with code 1")]
    assert "gloo-hostname-loopback" in ids


def test_a_failure_printed_at_info_stands_when_its_signature_is_standalone():
    line = "INFO 05-14 04:44:35 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform"
    assert [m.sig.id for m in matches(line)] == ["vllm-no-gpu-platform"]


@pytest.mark.parametrize("line", [
    # an inner ERROR level, an exception name or NCCL's WARN level under an informational tag
    "2023-12-01 08:55:00 | INFO | stdout | Caught Unknown Error CUDA error: device-side assert triggered",
    "x:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Call to connect returned Connection refused, retrying",
    "warning 07-24 21:16:52 _custom_ops.py:14] failed to import from vllm._c with importerror(\"libc.so.6\")",
])
def test_an_error_under_an_informational_tag_is_not_soft(line):
    assert SCANNER.fallback is not None and not SCANNER.fallback.is_soft_line(line)


# -- the precision gates: a verdict needs a line that names its failure --------------------------
# made-up lines in the engines' shapes (no corpus row): a notice pasted without its level uses the
# same words as an error ("not found", "Failed to", "not supported", "exceeds")
_BARE_NOTICES = [
    "[2026-01-02 03:04:05 TP0] Frobnicator weight not found in params_dict, skipped",
    "Cannot use the fused qqzzy kernel on this device.",
    "Failed to import qqzzy_ext",
    "Qqzzy communicator: device capability 7.0 not supported, communicator is not available.",
    "Tensor parallel size (16) exceeds available GPUs (8).",
]


@pytest.mark.parametrize("line", _BARE_NOTICES)
@pytest.mark.parametrize("prefilter", [False, True])
def test_a_bare_line_that_names_no_failure_gets_no_fallback_verdict(line, prefilter):
    assert SCANNER.fallback is not None and SCANNER.fallback.is_error_line(line)
    assert not SCANNER.fallback.is_hard_error_line(line)
    assert all(m.benign for m in matches(line, prefilter)), [m.sig.id for m in matches(line, prefilter)]


@pytest.mark.parametrize("line", [
    "RuntimeError: Frobnicator weight not found in params_dict",      # an exception name
    "qqzzy_init: socket connect failed with error 12",                # "error"
    "ERROR 01-02 03:04:05 [qqzzy.py:1] Frobnicator weight not found",  # an error level
    "h:1:2 [0] qqzzy.cc:7 NCCL WARN Frobnicator is available but not working",  # NCCL's error level
    "[E102 03:04:05.000 7 qqzzy.cpp:1] socket handshake not found",  # glog E
    "qqzzy: connect to peer 10.0.0.2 port 22: Connection refused",    # the C library's message
    "Unable to create qqzzy socket.",                                  # a failure verb
    "qqzzy version mismatch between driver and library",
    "runtimeerror: frobnicator weight not found in params_dict",      # a lower-cased paste
    # Python's bare `raise Exception(...)`: no word before the class name, no other error word
    # (the hard marker alone was unreachable: the line was not an error line at all)
    "Exception: something odd happened in the qqzzy scheduler",
    "  Exception: qqzzy replica state went away",
    # twelfth session: glog with the year in its date (Mooncake) and TensorRT-LLM's "[E]" level are
    # error levels; an exception whose message is a bare number is no "KEY: value" settings line
    "E20260821 12:30:19.435154 qqzzy.cpp:209] Failed to open qqzzy device on port 1",
    "[06/10/2025-02:50:21] [TRT-LLM] [E] Failed to initialize qqzzy executor on rank 0",
    "KeyError: 37",
])
@pytest.mark.parametrize("prefilter", [False, True])
def test_a_line_that_names_its_failure_gets_a_fallback_verdict(line, prefilter):
    assert SCANNER.fallback is not None and SCANNER.fallback.is_hard_error_line(line)
    ms = matches(line, prefilter)
    assert ms and ms[0].sig.id.startswith(FALLBACK_PREFIX), [m.sig.id for m in ms]


# Round 9 (development rows of sgl-project/sglang#7033 and vllm-project/vllm#30637): a failed
# dynamic link and an out-of-memory named by its abbreviation are hard, as titles and retellings
# put them; their near misses are in test_a_notice_alone_is_not_reported_as_an_error.
@pytest.mark.parametrize(("line", "category"), [
    ("[Bug] main branch fail to start due to sgl-kernel undefined symbol", "version"),
    ("[Bug]: CUDA OOM during sampler warmup with DeepSeek-V3.2 (DeepGEMM) on vLLM Nightly (V1 Engine)", "memory"),
])
@pytest.mark.parametrize("prefilter", [False, True])
def test_an_undefined_symbol_or_an_oom_names_its_failure(line, category, prefilter):
    assert SCANNER.fallback is not None and SCANNER.fallback.is_hard_error_line(line)
    ms = matches(line, prefilter)
    assert ms and ms[0].sig.category == category, [m.sig.id for m in ms]


def test_the_fallback_quotes_the_first_hard_line_not_the_first_error_line():
    text = "Cannot use the fused qqzzy kernel on this device.\nqqzzy_init: socket connect failed with error 12"
    ms = matches(text)
    assert ms[0].sig.id.startswith(FALLBACK_PREFIX) and "error 12" in ms[0].excerpt


@pytest.mark.parametrize("prefilter", [False, True])
def test_a_warning_line_that_names_no_failure_needs_a_hard_line_beside_it(prefilter):
    notice = ("WARNING 11-30 10:00:00 [fa_utils.py:90] Cannot use FA version 3 is not supported due to FA3 "
              "is only supported on devices with compute capability >= 8 excluding 8.6 and 8.9")
    assert SCANNER.fallback is not None and SCANNER.fallback.is_soft_line(notice)
    assert all(m.benign for m in matches(notice, prefilter))
    # a weak line beside it does not corroborate; a hard one does
    assert all(m.benign for m in matches(notice + "\n" + _BARE_NOTICES[0], prefilter))
    ids = [m.sig.id for m in matches(notice + "\nRuntimeError: worker exited with code 1", prefilter)]
    assert "fa3-capability" in ids


@pytest.mark.parametrize("line", [
    # WARNING lines that name their failure stay hard: their signature answers alone
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to [::ffff:10.0.0.2]:55121 "
    "(errno: 110 - Connection timed out).",
    "2022-08-11 17:52:21,412 WARNING worker.py:1799 -- The node with node id: c118 and address: 10.0.3.192 "
    "has been marked dead because the detector has missed too many heartbeats from it.",
])
def test_a_warning_line_that_names_its_failure_is_not_soft(line):
    assert SCANNER.fallback is not None and not SCANNER.fallback.is_soft_line(line)
    assert any(not m.benign for m in matches(line))


def test_without_the_gates_the_fallback_answers_a_bare_notice():
    """The gates are what keeps these lines quiet (benchmarks/explain_gates.py measures each)."""
    import dataclasses

    assert SCANNER.fallback is not None
    ungated = Scanner(fallback=dataclasses.replace(SCANNER.fallback, gates=frozenset()))
    assert any(not m.benign for m in ungated.explain_bytes(_BARE_NOTICES[0].encode()).matches)


# -- the fallback -------------------------------------------------------------------------------
def test_an_unknown_error_gets_a_low_confidence_category_with_the_line_and_next_step():
    line = "RuntimeError: frobnicator handshake with peer 10.1.2.3 over the ibv_ transport timed out"
    ms = matches(line)
    assert len(ms) == 1
    m = ms[0]
    assert m.sig.id == FALLBACK_PREFIX + "network" and m.confidence == "low"
    assert line in m.cause and "ibv_" in m.cause
    assert "k3doctor check --select NET" in m.sig.fix
    assert m.first_line == 1


@pytest.mark.parametrize("prefilter", [False, True])
def test_the_salient_line_is_the_last_exception(prefilter):
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/srv/app/loader.py", line 12, in load',
        "    raise ValueError('could not frobnicate')",
        "ValueError: could not frobnicate",
        "",
        "During handling of the above exception, another exception occurred:",
        "Traceback (most recent call last):",
        '  File "/srv/app/main.py", line 3, in <module>',
        "RuntimeError: the widget tensor shape disagrees with the checkpoint header",
    ])
    m = matches(text, prefilter)[0]
    assert m.confidence == "low" and m.first_line == 9
    assert m.sig.category == "checkpoint"


@pytest.mark.parametrize("text", [
    "INFO 11-30 10:00:00 [loader.py:12] Loading weights failed over to the slow path; continuing",
    "WARNING 11-30 10:00:00 [utils.py:1] Error fetching optional metadata; using defaults",
    "(VllmWorker rank=0 pid=42) WARNING 11-30 10:00:01 [x.py:3] connection timed out, retrying",
    "h1:1:1 [0] NCCL INFO NET/IB : No device found.",
    "/usr/lib/python3/site-packages/torch/x.py:9: UserWarning: failed to load optional module",
    "[W1130 10:00:00.000 socket.cpp:9] retrying after error",
    "2026-11-30 10:00:00,123 - INFO - download failed once, retry 1/5 succeeded",
    "all good here",
    "",
])
def test_lines_at_a_non_error_level_are_not_errors(text):
    assert not [m for m in matches(text) if not m.benign]
    assert not [m for m in matches(text, True) if not m.benign]


def test_a_level_word_in_prose_does_not_make_an_error_a_notice():
    # "debug info" / "the trace" are words, not log levels: only a capitalised level counts mid-line
    line = ("[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Frobnicator monitor timed out! "
            "Process will be terminated after dumping debug info.")
    assert SCANNER.fallback is not None and SCANNER.fallback.is_error_line(line)
    assert not SCANNER.fallback.is_error_line("2026-01-01 10:00:00 DEBUG frobnicate failed once")


def test_an_operand_path_votes():
    # the path is what the error is about: its words count
    m = matches("OSError: frobnication failed for '/home/u/.cache/frob/ninja-build/kernel.tmp'")[0]
    assert m.confidence == "low" and m.sig.category == "jit-cache", (m.sig.id, m.verdict)


@pytest.mark.parametrize("line", [
    "RuntimeError: frobnicate failed at /src/misc/socket.cc:518",
    "RuntimeError: frobnicate failed in /opt/nccl/transport/socket.cpp",
])
def test_a_source_path_does_not_vote(line):
    # the path only says where it was raised: neither the terms nor the learned model read it
    m = matches(line)[0]
    bare = matches("RuntimeError: frobnicate failed")[0]
    assert m.confidence == "low" and m.sig.category == bare.sig.category, (m.sig.id, m.verdict)
    assert m.verdict is not None and not m.verdict.terms
    assert not {"socket", "nccl", "transport", "misc", "src"} & set(m.verdict.learned_words)


@pytest.mark.parametrize("line", [
    "torch._frob.exc.InvalidFrobnicator: No working frobnicator found",
    "CUBLAS_STATUS_NOT_SUPPORTED when calling cublasFrobnicate",
    "The frob page size of the layer is not divisible by the maximum page size",
    "Unexpected key(s) in state_dict: \"frob.weight\"",
])
def test_failures_without_an_error_word_are_error_lines(line):
    assert SCANNER.fallback is not None and SCANNER.fallback.is_error_line(line)


# log formats whose level the fallback must read (round 7b): the same line at an error level stays
# an error line, so the level, not the wording, decides
_LEVELLED = [
    # c10 / glog with the month unpadded
    ("[{L}506 00:43:56.240378877 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=3): "
     "Connection reset by peer", "W", "E"),
    # Ray's C++ prefix [time level pid tid]
    ("[2021-05-27 23:34:14,165 {L} 7164 3876] gcs_redis_failure_detector.cc:30: Starting redis failure "
     "detector.", "I", "E"),
    # a bracketed level after another bracketed tag
    ("[TensorRT-LLM][{L}] cross_kv_cache_fraction is not specified, error if it's encoder-decoder model",
     "WARNING", "ERROR"),
    ("[2024-06-21 12:10:09][{L}][dist:314] - connection to the store failed, using [24 / 24] devices",
     "WARNING", "ERROR"),
    # TensorFlow / absl C++ lines
    ("2025-02-09 09:37:33.337631: {L} tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:268] "
     "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", "W", "E"),
    # onnxruntime
    ("2026-02-08 08:53:50.156670203 [{L}:onnxruntime:Default, device_discovery.cc:211 Discover] GPU "
     "device discovery failed: Failed to open file", "W", "E"),
]


@pytest.mark.parametrize("line,quiet,loud", _LEVELLED)
def test_the_level_decides_whether_a_line_is_an_error(line, quiet, loud):
    fb = SCANNER.fallback
    assert fb is not None
    assert not fb.is_error_line(line.format(L=quiet)), line.format(L=quiet)
    assert fb.is_error_line(line.format(L=loud)), line.format(L=loud)


@pytest.mark.parametrize("line", [
    'time="2026-01-01T00:00:00Z" level=warning msg="failed to probe optional device plugin, retry later"',
    '{"asctime": "2026-02-13 02:47:02,310", "levelname": "W", "message": "Failed to export spans"}',
    "2024-02-13T02:09:33,228 [WARN ] W-9000-model_1.0-stderr MODEL_LOG - failed to load optional codec",
])
def test_structured_and_bracketed_levels_are_read(line):
    fb = SCANNER.fallback
    assert fb is not None and not fb.is_error_line(line)
    assert not [m for m in matches(line) if not m.benign]


@pytest.mark.parametrize("line,bare", [
    ("(Setting affinity with NVML failed, skipping...)", "(Setting affinity with NVML failed)"),
    ("device mlx5_3 cannot allocate buffer on the specified memory type. Skipping...",
     "device mlx5_3 cannot allocate buffer on the specified memory type."),
    ("Failed to connect to the span collector. Traces will not be exported.",
     "Failed to connect to the span collector."),
    ("Request 12 preempted because there is not enough KV cache space. This can affect the end-to-end "
     "performance.", "Request 12 preempted because there is not enough KV cache space."),
    ("max_tokens_in_paged_kv_cache is invalid, will use default value",
     "max_tokens_in_paged_kv_cache is invalid"),
    ("The following error message 'operation scheduled before its operands' can be safely ignored.",
     "The following error message 'operation scheduled before its operands'."),
    ("'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out.\"))' "
     "thrown while requesting HEAD https://huggingface.co/x/resolve/main/config.json",
     "'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out.\"))'"),
])
def test_a_line_that_says_what_it_does_about_a_problem_is_not_an_error(line, bare):
    """The hedge, not the rest of the line, makes it a notice: without it the line is an error line."""
    fb = SCANNER.fallback
    assert fb is not None
    assert not fb.is_error_line(line)
    assert not [m for m in matches(line) if not m.benign]
    assert fb.is_error_line(bare), bare


def test_text_without_an_error_is_still_nothing_recognised():
    r = run(["model loaded in 3.2 s; serving on port 30000"])
    assert r.exit_code == 1 and "nothing recognised" in r.output


def test_a_signature_cause_suppresses_the_fallback():
    text = ("RuntimeError: frobnicator exploded\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    ids = [m.sig.id for m in matches(text)]
    assert ids == ["torch-cuda-oom"]


def test_an_unexplained_error_outranks_a_symptom_wrapper():
    text = ("ValueError: the frobnicator kernel needs a GPU compute capability the quux device lacks\n"
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    ms = matches(text)
    assert ms[0].confidence == "low" and ms[0].sig.category == "arch"
    assert "engine-startup-failed" in [m.sig.id for m in ms]


def test_no_term_means_other_not_silence():
    m = matches("FooBarError: qux")[0]
    assert m.sig.id == "fallback-other" and "No category term" in m.cause


@pytest.mark.parametrize("line", [
    # glog / absl CHECK, and TVM's ICHECK as FlashInfer's TVM-FFI kernels print it (dev row flashinfer#3828)
    "Check failed: num_tokens > 64 (7 vs. 64) : Decode (num_tokens <= 64) must go through",
    "F1130 10:20:00.000000 4242 frob.cc:42] Check failed: widget_count == 3 (2 vs. 3)",
])
@pytest.mark.parametrize("prefilter", [False, True], ids=["text-mode", "log-mode"])
def test_a_failed_check_is_an_explicit_error_even_without_a_category_word(line, prefilter):
    """A failed CHECK aborts the process: with no category word it still gets a verdict (other, low
    confidence) instead of silence, also beside a benign WARNING line that changes how the block wraps."""
    notice = ("WARNING 07-03 17:16:00 [__init__.py:2782] Methods determine_num_available_blocks,device_config,"
              "get_cache_block_size_bytes not implemented in <vllm.v1.worker.gpu_worker.Worker object at 0x78dfeb7665a0>")
    for text in (line, notice + "\n" + line + "\n" + notice):
        ms = matches(text, prefilter)
        assert ms and ms[0].sig.id == "fallback-other" and ms[0].confidence == "low", text


def test_a_passed_check_notice_stays_silent():
    assert not matches("INFO 07-03 17:16:00 [health.py:12] Check passed: all 8 GPUs visible")


def test_json_reports_the_confidence():
    r = run(["--format", "json", "RuntimeError: the gizmo driver version is too old for this runtime"])
    doc = json.loads(r.output)
    assert r.exit_code == 0 and doc["recognised"] is True
    assert doc["matches"][0]["confidence"] == "low"
    assert doc["matches"][0]["id"] == "fallback-version"


def test_malformed_fallback_model_is_rejected():
    from importlib import resources

    good = (resources.files("k3doctor.explain") / "kb" / "fallback.toml").read_text(encoding="utf-8")
    assert parse_fallback_text(good).categories
    with pytest.raises(KBError, match="every category"):
        parse_fallback_text("[markers]\n")
    with pytest.raises(KBError, match="non-empty list"):
        parse_fallback_text(good.replace("exception = [", "exception_ = [", 1))
    with pytest.raises(KBError, match="weight"):
        parse_fallback_text(good.replace('["socket", 3]', '["socket"]'))
    with pytest.raises(KBError, match="every category"):
        parse_fallback_text(good.replace('name = "other"', 'name = "memory"'))
    with pytest.raises(KBError, match="unknown or benign"):
        parse_fallback_text(good.replace('name = "other"', 'name = "benign"'))


def test_fallback_terms_do_not_backtrack():
    import time

    t0 = time.perf_counter()
    for filler in ("a" * 5000, "Error " * 2000, "(" * 5000, "INFO " * 2000, "x." * 3000):
        SCANNER.explain_bytes(("RuntimeError: " + filler).encode())
        SCANNER.explain_bytes((filler + " failed").encode(), prefilter=True)
    assert time.perf_counter() - t0 < 5


# -- signature ids ------------------------------------------------------------------------------
def test_every_signature_id_is_explainable():
    for sig in load_kb():
        r = run([sig.id])
        assert r.exit_code == 0, (sig.id, r.output)
        assert sig.title in r.output and "## Fix" in r.output
        for url in sig.references:
            assert url in r.output


def test_fallback_ids_are_explainable_and_json_works():
    r = run(["fallback-memory"])
    assert r.exit_code == 0 and "k3doctor plan" in r.output
    doc = json.loads(run(["--format", "json", "gloo-interface-not-found"]).output)
    assert doc["id"] == "gloo-interface-not-found" and doc["category"] == "network" and doc["references"]


def test_an_unknown_id_lists_the_closest_ids():
    r = run(["nccl-timeout"])
    assert r.exit_code == 1
    assert "unknown signature id 'nccl-timeout'" in r.output and "nccl-watchdog-timeout" in r.output


# -- never a traceback --------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=4096))
def test_binary_input_never_crashes(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("bin") / "rank0.log"
    p.write_bytes(data)
    text = data.decode("utf-8", "surrogateescape")
    for args, inp in ((["--", text or " "], None), (["-"], data), (["--log", str(p)], None)):
        for fmt in ("text", "json", "rich"):
            r = CliRunner().invoke(command, ["--format", fmt, *args], input=inp)
            assert r.exit_code in (0, 1), (args[:1], fmt, r.output, r.exception)
            assert r.exception is None or isinstance(r.exception, SystemExit)


@pytest.mark.parametrize("data", [b"", b"\x00" * 10000, b"\xff\xfe" * 5000, b"\n" * 10000,
                                  b"\x1b[31m" * 1000, "é€😀".encode() * 1000])
def test_edge_inputs(tmp_path, data):
    p = tmp_path / "x.log"
    p.write_bytes(data)
    for args, inp in ((["-"], data), (["--log", str(p)], None)):
        r = run(["--format", "json", *args], input=inp)
        assert r.exit_code in (0, 1) and json.loads(r.output)["schema_version"] == 1


def test_a_binary_file_gets_no_fallback_verdict():
    """Strings between runs of NUL bytes (an executable or a core dump given as a log by mistake)
    are no error line, so no low-confidence guess is made from them; a log line after the NUL
    padding a crash can leave is still read."""
    from k3doctor.explain import explain_text

    binary = ("\x00\x00abcdfghiklmnopq:xABCD\x00\x00ignoring invalid width in environment variable COLUMNS: %s"
              "\x00\x00--dired and --zero are incompatible\x00\x00")
    assert explain_text(binary).matches == []
    padded = explain_text("\x00\x00\x00\x00RuntimeError: something failed badly in the engine")
    # (which category a line without a category word gets is the learned model's guess: other
    # before the nearest-neighbour vote, version with it; what matters here is that it is read)
    assert [m.sig.id.startswith("fallback-") for m in padded.matches] == [True]
    assert padded.matches[0].evidence[0][2].endswith("something failed badly in the engine")


@pytest.mark.parametrize("line", [
    "INFO 05-14 04:44:37 [engine.py:1] Exception: none raised during the qqzzy warm-up",  # a level
    "qqzzy.Exception: is the name of the base class",  # a qualified name, not Python's bare print
])
def test_a_bare_exception_line_stays_a_notice_at_a_non_error_level(line):
    assert SCANNER.fallback is not None and not SCANNER.fallback.is_hard_error_line(line)
    assert not [m for m in matches(line) if not m.benign]


def test_a_bare_exception_is_the_salient_line():
    """Python prints the exception last: the bare ``Exception: <msg>`` is quoted, not the
    frame above it."""
    text = ('  File "/opt/qqzzy/launcher.py", line 12, in main\n    raise Exception("boom")\n'
            "Exception: qqzzy launcher could not start the replica")
    ms = matches(text)
    assert ms and ms[0].sig.id.startswith(FALLBACK_PREFIX)
    assert ms[0].verdict is not None and ms[0].verdict.line.startswith("Exception: qqzzy launcher")


# -- a consequence that reports a harmless line is no failure (round 92) --------------------------
@pytest.mark.parametrize("text", [
    # dev benign row pytorch#2530: gloo's CUDA teardown at exit, wrapped by C++'s terminate line
    "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
    "  what():  [enforce fail at /tmp/pip-6uwp_cfg-build/third_party/gloo/gloo/cuda_private.h:40] "
    "error == cudaSuccess. 29 vs 0. Error at: /tmp/pip-6uwp_cfg-build/third_party/gloo/gloo/"
    "cuda_private.h:40: driver shutting down",
    # dev benign row pytorch#9127: a peer reset reported inside Python's ignored-exception report
    "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    "Exception ignored in: <bound method _DataLoaderIter.__del__ of "
    "<torch.utils.data.dataloader._DataLoaderIter object at 0x7fec6928a9b0>>",
])
@pytest.mark.parametrize("prefilter", [False, True])
def test_a_consequence_beside_a_benign_line_gets_no_verdict(text, prefilter):
    found = matches(text, prefilter)
    assert found and all(m.benign for m in found), [m.sig.id for m in found]


@pytest.mark.parametrize("prefilter", [False, True])
def test_a_consequence_after_a_benign_line_keeps_its_verdict(prefilter):
    """A consequence reports the line printed right *after* it (C++'s thrown error under "terminate
    called after throwing", the exception under "Exception ignored in:"), never the line before it:
    an unrelated harmless line just above a consequence does not hide it (dev benign row
    3dcf719674, c10d's IPv6 probe, above the title of dev row 21c981877f: a sandwich test's pair)."""
    probe = ("[W socket.cpp:426] [c10d] The server socket cannot be initialized on [::]:6001 (errno: 97 - "
             "Address family not supported by protocol).")
    title = ("[Bug] sglang 0.5.17 + hierarchical cache + chunked prefill 16K: scheduler hang in DSV4 sparse "
             "prefill (watchdog abort) on DeepSeek-V4 FP8 / H20 \u2014 plus sampling device-side assert on 0.5.16+PR")
    found = [m for m in matches(probe + "\n" + title, prefilter) if not m.benign]
    assert found and found[0].sig.id.startswith(FALLBACK_PREFIX), [m.sig.id for m in found]
    # ... while the same consequence right above the harmless line is read as reporting it, as
    # round 92's rows are (the rule cannot tell a title from "terminate called after throwing")
    assert all(m.benign for m in matches(title + "\n" + probe, prefilter))


@pytest.mark.parametrize("text, want", [
    # the same consequences with no benign line beside them keep their verdict ...
    ("ConnectionResetError: [Errno 104] Connection reset by peer", "network"),
    # ... and a cause beside the ignored-exception report still names the failure (dev row ray#63553)
    ("ERROR __init__.py:1568 -- Unexpected exception raised in task execution handler: 'Worker' object has "
     "no attribute 'core_worker'\nAttributeError: 'Worker' object has no attribute 'core_worker'\n"
     "Exception ignored in: 'ray._raylet.call_actor_shutdown'", None),
])
def test_a_consequence_without_a_benign_neighbour_keeps_its_verdict(text, want):
    found = [m for m in matches(text) if not m.benign]
    assert found, text
    if want is not None:
        assert found[0].sig.category == want
