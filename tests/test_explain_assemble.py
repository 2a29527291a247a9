"""Line assembly (``k3doctor/explain/assemble.py``): a hard-wrapped line is read as one, and
lines that are records of their own stay apart."""

from __future__ import annotations

import textwrap
import time

import pytest

from k3doctor.explain.assemble import join_pieces, logical_lines, wrapped_groups
from k3doctor.explain.scan import Scanner, explain_text

SCANNER = Scanner()

VLLM = ("(VllmWorker rank=3 pid=268) ERROR 05-12 19:01:18 [multiproc_executor.py:470] RuntimeError: "
        "NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled system "
        "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5")


def _joined(text: str) -> list[str]:
    return [line.decode() for _st, _en, _i, line, _g in logical_lines(text.encode())]


def _ids(text: str) -> list[str]:
    return [m.sig.id for m in explain_text(text).matches]


@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_word_wrapped_log_line_is_read_as_one(width: int) -> None:
    text = textwrap.fill(VLLM, width, break_on_hyphens=False)
    assert text.count("\n") >= 1
    (_st, _en, first, spaced, glued), = logical_lines(text.encode())
    # the whole line, up to where the wrap put a blank (a long path is cut mid-word: the glued
    # reading has it whole)
    assert first == 0 and spaced.replace(b" ", b"") == VLLM.replace(" ", "").encode()
    assert _ids(text)[0] == _ids(VLLM)[0] == "nccl-unhandled-system-error"


def test_a_hanging_indent_a_quote_and_a_panel_are_dropped_at_the_seams() -> None:
    pieces = textwrap.wrap(VLLM, 100, break_on_hyphens=False)
    indent = pieces[0] + "\n" + "\n".join("    " + p for p in pieces[1:])
    quote = "\n".join("> " + p for p in pieces)
    panel = "\n".join("\u2502 " + p.ljust(80) + " \u2502" for p in pieces)
    assert _joined(indent) == [VLLM]
    assert _joined(quote) == ["> " + VLLM]
    assert _joined(panel) == ["\u2502 " + VLLM]


def test_fold_cut_mid_word_is_also_read_glued() -> None:
    line = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: eth0"
    text = "\n".join(line[i:i + 50] for i in range(0, len(line), 50))
    (_st, _en, _i, spaced, glued), = logical_lines(text.encode())
    assert glued is not None and glued.decode() == line
    assert spaced.decode() != line  # the spaced reading puts a blank at each cut
    assert _ids(text)[0] == "gloo-interface-not-found"


def test_a_wrapped_notice_stays_a_notice() -> None:
    """The second half of a wrapped INFO/WARNING line has no level of its own; read alone it was an
    error line (a false alarm)."""
    notice = ("[rank0]:[W Utils.hpp:164] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is "
              "deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)")
    for width in (60, 80, 100):
        text = textwrap.fill(notice, width)
        assert all(m.benign for m in explain_text(text).matches), width


def test_records_stay_apart() -> None:
    tb = ('Traceback (most recent call last):\n'
          '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 100, in run_engine_core\n'
          '    raise RuntimeError("Engine core initialization failed. See root cause above.")\n'
          'RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}')
    assert _joined(tb) == []  # a whole frame header, then its code line, then the exception
    repeated = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" * 3).strip()
    assert _joined(repeated) == []
    stamped = ("2025-01-01 10:00:00 INFO model loaded in 12.3 s, 96 shards, 1.56 TB total, 16 ranks ready\n"
               "2025-01-01 10:00:01 ERROR NCCL error: unhandled system error")
    assert _joined(stamped) == []
    # the longest line of an unwrapped paste reaches the width trivially; a capitalised line after
    # it may start a record, and with no wrap around it, it does
    two = ("VM-0-14:162637:162637 [6] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using "
           "internal implementation\nAttempting to deserialize object on a CUDA device but "
           "torch.cuda.is_available() is False.")
    assert _joined(two) == []
    assert not all(m.benign for m in explain_text(two).matches)


def test_a_line_break_where_the_next_word_fits_is_not_a_wrap() -> None:
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered, see rank 3\n"
            "for details\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the trace "
            "below might be incorrect.")
    assert wrapped_groups(text.encode())[0] == {}


def test_a_maybe_record_joins_inside_a_wrapped_run() -> None:
    """``RpcError:`` at the head of a line may start a record; right after a clean seam it is the
    wrap's."""
    line = ("[2025-12-06 15:49:24,447 E 2645650 2646941] core_worker_process.cc:825: Failed to establish "
            "connection to the metrics exporter agent. Metrics will not be exported. Exporter agent status: "
            "RpcError: Running out of retries to initialize the metrics agent. rpc_code: 14")
    text = textwrap.fill(line, 100)
    assert text.split("\n")[2].startswith("RpcError")
    assert _joined(text) == [line]


def test_join_pieces_drops_frames_and_keeps_text() -> None:
    spaced, glued = join_pieces([b"\xe2\x94\x82 abc def   \xe2\x94\x82", b"\xe2\x94\x82 ghi       \xe2\x94\x82"], 40)
    assert spaced == b"\xe2\x94\x82 abc def ghi" and glued is None


@pytest.mark.parametrize("data", [
    b"a" * 80 + b"\n" * 1 + (b"b" * 80 + b"\n") * 200_000,        # every line exactly the width
    (b"x" * 79 + b" y\n") * 100_000,                              # a wrap candidate on every line
    (b"RuntimeError: NCCL error: unhandled system error\n") * 300_000,
    b"z" * (2 << 20) + b"\n" + b"w" * 100 + b"\n",
])
def test_assembly_is_linear_on_hostile_blocks(data: bytes) -> None:
    t0 = time.perf_counter()
    logical_lines(data[: 4 << 20])
    assert time.perf_counter() - t0 < 2.0


def test_a_block_of_only_continuations_is_read_in_capped_pieces() -> None:
    data = b"".join(b"c%05d " % i + b"c" * 94 + b"\n" for i in range(2000))
    rep = SCANNER.explain_bytes(data)
    assert rep.lines_scanned == 2000
    groups, _w = wrapped_groups(data)
    assert groups and all(last - first < 200 for first, last in groups.items())


def test_a_notice_does_not_swallow_the_error_after_it() -> None:
    """The longest line of a paste is a WARNING notice; the next, shorter line starts in lower case
    but raises an error: it is a record of its own, not the notice's continuation (the benign
    notice outranked the error when the two were joined)."""
    notice = ("(worker pid=77) INFO 05-13 08:48:35 utils.py:132] reading the peer-access cache\n"
              "(worker pid=77) WARNING 05-13 08:48:35 all_reduce.py:166] Custom allreduce is disabled because "
              "your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
              "disable_custom_all_reduce=True explicitly.")
    text = notice + "\nclean `RuntimeError: none of the configured backends are usable on sm120` at start\n" + notice
    groups, _ = wrapped_groups(text.encode())
    assert groups == {}, groups
    matches = Scanner().explain_bytes(text.encode()).matches
    assert matches and not matches[0].benign, [(m.sig.id, m.benign) for m in matches]


def test_a_benign_line_at_the_wrap_width_does_not_swallow_the_error_under_it() -> None:
    """Two records read as one wrapped line (a wrapped benign notice reaches the block's width, the
    error line under it starts like a message) must not make the error vanish behind the benign
    reading: the pieces are read one by one instead."""
    from k3doctor.explain.scan import Scanner

    head = ("WARNING 03-01 10:00:00 [custom_all_reduce.py:137] Custom allreduce is disabled because this "
            "process group spans across")
    rest = "nodes and the communicator falls back to NCCL for every all-reduce on this rank of the group!!"
    rest += "x" * (len(head) - len(rest) - 2)
    error = "[Bug] vllm only builds sm_120, not sm_121 on DGX Spark"
    text = f"{head}\n{rest}\n{error}\n{head}\n{rest}\nINFO 03-01 10:00:01 [llm_engine.py:9] done"
    assert wrapped_groups(text.encode())[0] == {0: 2, 3: 4}  # the error line is taken into the notice
    got = Scanner().explain_bytes(text.encode(), prefilter=True)
    assert [m.sig.id for m in got.matches] == ["arch-missing-from-build", "custom-allreduce-disabled"]
    # ending on the notice's last piece, the paste shows that piece is where the notice ends (a
    # wrapped line goes on the same way wherever it is printed): the error line stays apart
    text = f"{head}\n{rest}\n{error}\n{head}\n{rest}"
    assert wrapped_groups(text.encode())[0] == {0: 1, 3: 4}
    got = Scanner().explain_bytes(text.encode(), prefilter=True)
    assert [m.sig.id for m in got.matches] == ["arch-missing-from-build", "custom-allreduce-disabled"]


def test_a_failed_equality_check_does_not_continue_a_notice() -> None:
    text = ("WARNING 03-01 10:00:00 [fused_moe.py:99] Using default MoE config. Performance might be "
            "sub-optimal! Config file not found at /x.json\n"
            "expert_indices.size(1) == args->top_k (1 vs. 6) : expert_indices dim1 must match top_k.")
    assert logical_lines(text.encode()) == []


def test_a_python_warning_line_starts_a_record():
    """``path:line: XxxWarning: ...`` (Python's warnings format) is never the continuation of the
    line above it, even where that line is as long as the block's longest (a dev benign line and
    a dev error row of the corpus: round 20's seeded-probe failure)."""
    from k3doctor.explain.assemble import wrapped_groups
    from k3doctor.explain.scan import Scanner

    warn = ("/usr/local/bin/render50:21: DeprecationWarning: pkg_resources is deprecated as an API. "
            "See https://setuptools.pypa.io/en/latest/pkg_resources.html")
    err = ("THCudaCheck FAIL file=/pytorch/aten/src/ATen/native/cuda/Normalization.cuh line=467 error=9 : "
           "invalid configuration argument")
    text = f"{warn}\n{err}\n{warn}".encode()
    assert wrapped_groups(text)[0] == {}
    top = Scanner().explain_bytes(text, prefilter=True).matches[0]
    assert not top.benign and top.sig.category != "benign"
    win = "c:\\src\\torch\\utils\\_config_module.py:440: UserWarning: Skipping serialization"
    for line in (warn, win, "pypots/nn/local_attention.py:31: FutureWarning: `x` is deprecated"):
        assert wrapped_groups(f"{err}\n{line}".encode())[0] == {}


def test_a_compiler_diagnostic_starts_a_record():
    """``file:line:col: error: ...`` (a compiler's diagnostic, a Windows path too) is never the
    continuation of the line above it (a dev error row of the corpus between two copies of a dev
    benign line: round 24's seeded-probe failure)."""
    from k3doctor.explain.assemble import wrapped_groups
    from k3doctor.explain.scan import Scanner

    err = ("C:\\ComfyUI\\venv\\Lib\\site-packages\\sageattention\\attn_qk_int8_per_block.py:17:26: error: "
           "'tt.load' op operation destroyed but still has uses\n        k_scale = tl.load(K_scale_ptr)\n"
           "                         ^")
    notice = ("W0611 21:28:26.564000 5848 torch\\_dynamo\\convert_frame.py:824] Set TORCH_LOGS=\"+dynamo\" "
              "and TORCHDYNAMO_VERBOSE=1 for more information")
    text = f"{notice}\n{err}\n{notice}".encode()
    assert 0 not in wrapped_groups(text)[0]
    top = Scanner().explain_bytes(text, prefilter=True).matches[0]
    assert not top.benign
    for diag in ("/src/x.cu(12): error: identifier", "kernel.cu:12:3: fatal error: cuda.h: No such file",
                 "a.py:3: note: see here"):
        if "(" in diag.split(":")[0]:
            continue  # (nvcc's "file(12): error" form is not this rule's)
        assert 0 not in wrapped_groups(f"{'x' * 130} and the line goes on to the width\n{diag}".encode())[0]


def test_a_lone_longest_line_ending_a_sentence_is_not_continued_in_lower_case():
    """The one line of a paste that reaches its width, ending a sentence, is an unwrapped paste's
    longest line: the lower-case line under it (``torch.compile failed``, a quoted ``use_fast``) is
    a record of its own (dev rows of the corpus between two copies of a dev benign line: the
    merged rounds 30-33's seeded-probe failures). A file name cut after its dot goes on."""
    warn = ("~/envs/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py:4876: UserWarning: "
            "barrier(): using the device under current context. You can specify `device_id` in "
            "`init_process_group` to mute this warning.")
    err = 'torch.compile failed. "g++: error: /tmp/torchinductor_**** file not found"'
    text = f"{warn}\n{err}\n{warn}".encode()
    assert wrapped_groups(text)[0] == {}
    top = Scanner().explain_bytes(text, prefilter=True).matches[0]
    assert not top.benign
    version = ("flashinfer-cubin version (0.6.13) does not match flashinfer version (0.6.14). Please install "
               "the same version of both packages. Set FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass this check.")
    notice = ("`use_fast` is set to `True` but the image processor class does not have a fast version.  "
              "Falling back to the slow version.")
    assert wrapped_groups(f"{notice}\n{version}\n{notice}".encode())[0] == {}
    # a full stop inside closing code ticks ends the sentence too (a dev error row under a dev notice)
    oor = ("`triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 663808, "
           "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.`")
    short = "`torch_dtype` is deprecated! Use `dtype` instead"
    assert wrapped_groups(f"{short}\n{oor}\n{short}".encode())[0] == {}
    # a cut inside a file name, after its dot: the two pieces are one line (as before)
    cut = ("user:852750:852750 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.\n"
           "so: cannot open shared object file: No such file or directory")
    assert wrapped_groups(cut.encode())[0] == {0: 1}
    # and without the full stop, a lower-case line still continues the only full line
    assert wrapped_groups(f"{'x' * 120} and the sentence goes on past the\nwidth of the line".encode())[0] == {0: 1}


def test_a_source_location_with_a_level_and_state_dict_items_start_records():
    """NCCL's ``include/socket.h:344 WARN`` (host prefix cut off) and ``load_state_dict``'s items
    (``size mismatch for``, ``Missing key(s) in``, ``Unexpected key(s) in``) start records: never
    glued onto the longest line above them (dev error rows under dev NCCL INFO lines)."""
    info = ("qh100-gpu20:39634:39692 [5] NCCL INFO comm 0x5558e3c10180 rank 13 nRanks 16 nNodes 2 "
            "localRanks 8 localRank 5 MNNVL 0")
    for line in ("include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol",
                 "size mismatch for lm.lm_head.weight: copying a param with shape torch.Size([50400, 4096])",
                 "Missing key(s) in state_dict: \"model.embed.weight\"",
                 "Unexpected key(s) in state_dict: \"lm_head.bias\""):
        text = f"{info}\n{line}\n{info}".encode()
        assert wrapped_groups(text)[0] == {}, line
        top = Scanner().explain_bytes(text, prefilter=True).matches
        assert top and not top[0].benign, line


def test_a_line_printed_again_ends_where_it_ends():
    """A wrapped line goes on the same way wherever it is printed again. So a full line that is
    printed again as the paste's last line is not continued by the line under it (a dev error row
    between two copies of a dev benign line of about its length: the merged rounds 30-33's
    seeded-probe failure)."""
    info = ("(APIServer pid=2709055) INFO 09-29 09:43:31 [api_server.py:1818] vLLM API server version "
            "0.11.0rc2.dev18+gcd87bfbf3")
    err = "vllm:0.9.2-r36.4-cu126-22.04-flashinfer fail with Unsupported gpu architecture 'compute_100a'"
    text = f"{info}\n{err}\n{info}".encode()
    assert wrapped_groups(text)[0] == {}
    top = Scanner().explain_bytes(text, prefilter=True).matches
    assert top and top[0].sig.id == "toolchain-unknown-gpu-target"
    # the same pair once, or followed by the same line each time, still reads as one wrapped line
    assert wrapped_groups(f"{info}\n{err}".encode())[0] == {0: 1}
    assert wrapped_groups(f"{info}\n{err}\n{info}\n{err}".encode())[0] == {0: 1, 2: 3}


def test_a_line_printed_again_as_the_first_line_is_no_continuation():
    """The paste's first line starts a record, so the same text printed again under a full line is
    a record too, not that line's continuation (a dev error row between two copies of a dev benign
    line in lower case, of about its length: round 48's seeded-probe failure)."""
    notice = "use_cache=True is incompatible with gradient checkpointing. Setting use_cache=False..."
    err = "No compiled cutlass_scaled_mm for CUDA device capability: 120. Required capability: 90 or 100"
    text = f"{notice}\n{err}\n{notice}".encode()
    assert wrapped_groups(text)[0] == {}
    top = Scanner().explain_bytes(text, prefilter=True).matches
    assert top and not top[0].benign
    # a continuation printed after its first piece each time is still joined
    head = "x" * 100 + " and goes"
    assert wrapped_groups(f"{head}\non here\n{head}\non here".encode())[0] == {0: 1, 2: 3}
