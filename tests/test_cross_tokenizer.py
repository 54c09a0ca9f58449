import math

import numpy as np
import pytest
import torch

from neurips25 import cross_tokenizer as ct
from neurips25.lm import build_tokenizer, tiny_model


@pytest.fixture(scope="module")
def toks():
    corpus = ct.markov_corpus(300, seed=1)
    return corpus, build_tokenizer("bpe", corpus, vocab_size=400), build_tokenizer("byte")


def test_markov_corpus_is_seeded_and_validated():
    assert ct.markov_corpus(5, seed=3) == ct.markov_corpus(5, seed=3)
    assert ct.markov_corpus(5, seed=3) != ct.markov_corpus(5, seed=4)
    with pytest.raises(ValueError, match="n must be"):
        ct.markov_corpus(0)
    with pytest.raises(ValueError, match="branching"):
        ct.markov_corpus(3, n_words=5, branching=9)
    with pytest.raises(ValueError, match="noise"):
        ct.markov_corpus(3, noise=1.5)
    # noise = 0 is the chain itself; noise > 0 draws words outside the chain's transitions
    assert ct.markov_corpus(20, seed=3, noise=0.0) == ct.markov_corpus(20, seed=3)
    clean = {tuple(s.split()[i:i + 2]) for s in ct.markov_corpus(2000, seed=5) for i in range(8)}
    noisy = {tuple(s.split()[i:i + 2]) for s in ct.markov_corpus(200, seed=6, noise=0.8) for i in range(8)}
    assert len(noisy - clean) > len(noisy) // 2


@pytest.mark.parametrize("debias", [False, True])
def test_aligned_chunks_decode_to_identical_bytes(toks, debias):
    corpus, bpe, byte = toks
    bpe2 = build_tokenizer("bpe", corpus[::-1], vocab_size=300)
    texts = corpus[:20] + ["naïve café déjà vu", "x  y"]
    for tok_s in (byte, bpe2):
        ids_t, et = ct.token_byte_ends(bpe, texts)
        ids_s, es = ct.token_byte_ends(tok_s, texts)
        for text, a, b, it, is_ in zip(texts, et, es, ids_t, ids_s):
            assert a[-1] == b[-1] == len(text.encode())
            ct_, cs, bounds = ct.align_chunks(a, b, text, debias=debias)
            assert np.all(np.diff(ct_) >= 0) and np.all(np.diff(cs) >= 0)
            for c in range(len(bounds)):
                dt = bpe.decode([it[k] for k in np.flatnonzero(ct_ == c)])
                ds = tok_s.decode([is_[k] for k in np.flatnonzero(cs == c)])
                assert dt == ds and dt  # same, non-empty bytes
            if debias:  # whole words: every chunk but the first starts with a space
                starts = np.concatenate([[0], bounds[:-1]])
                assert all(text.encode()[s:s + 1] == b" " for s in starts[1:])


def test_align_chunks_rejects_mismatched_texts():
    with pytest.raises(ValueError, match="different texts"):
        ct.align_chunks(np.array([2, 5]), np.array([1, 4]))
    with pytest.raises(ValueError, match="needs text"):
        ct.align_chunks(np.array([2, 5]), np.array([5]), debias=True)
    with pytest.raises(ValueError, match="bytes"):
        ct.align_chunks(np.array([2, 5]), np.array([5]), "abc", debias=True)
    with pytest.raises(TypeError, match="list of strings"):
        ct.token_byte_ends(build_tokenizer("byte"), "one string")


def test_chunk_logprobs_identical_tokenizers_equal_token_logprobs(toks):
    corpus, bpe, _ = toks
    _, e = ct.token_byte_ends(bpe, corpus[:4])
    for ends in e:
        ct_, cs, bounds = ct.align_chunks(ends, ends)
        assert len(bounds) == len(ends) and np.array_equal(ct_, np.arange(len(ends)))
        lp = -torch.rand(1, len(ends))
        out = ct.chunk_logprobs(lp, torch.as_tensor(cs)[None], len(bounds))
        torch.testing.assert_close(out, lp)
    # padding (-1) is ignored; chunks sum their tokens
    out = ct.chunk_logprobs(torch.tensor([[-1.0, -2.0, -3.0, -9.0]]), torch.tensor([[0, 0, 1, -1]]), 2)
    torch.testing.assert_close(out, torch.tensor([[-3.0, -3.0]]))
    with pytest.raises(ValueError, match="differ in shape"):
        ct.chunk_logprobs(torch.zeros(1, 3), torch.zeros(1, 2, dtype=torch.long), 1)


def test_log1mexp_stable():
    x = torch.tensor([-1e-8, -1e-3, -0.5, -math.log(2), -5.0, -50.0], dtype=torch.float64)
    torch.testing.assert_close(ct.log1mexp(x), torch.log(-torch.expm1(x)))
    assert torch.isfinite(ct.log1mexp(torch.tensor([-1e-7, -100.0]))).all()


def test_alm_loss_and_gradient_vanish_iff_equal():
    lp_t = -torch.rand(3, 5, dtype=torch.float64) * 4 - 0.01
    for tau in (1.0, 10.0):
        lp_s = lp_t.clone().requires_grad_(True)
        loss = ct.alm_loss(lp_t, lp_s, tau=tau)
        loss.backward()
        assert abs(float(loss.detach())) < 1e-12 and lp_s.grad.abs().max() < 1e-12
        lp_s = (lp_t - 0.3).requires_grad_(True)
        loss = ct.alm_loss(lp_t, lp_s, tau=tau)
        assert float(loss.detach()) > 0
        # finite-difference check of the gradient
        g, = torch.autograd.grad(loss, lp_s)
        d = torch.zeros_like(lp_s)
        d[1, 2] = 1e-6
        with torch.no_grad():
            fd = (ct.alm_loss(lp_t, lp_s + d, tau=tau) - ct.alm_loss(lp_t, lp_s - d, tau=tau)) / 2e-6
        assert abs(float(fd) - float(g[1, 2])) < 1e-6
    mask = torch.zeros(3, 5)
    mask[0, 0] = 1
    assert float(ct.alm_loss(lp_t, lp_t - 1, mask, reduction="mean")) == pytest.approx(
        float(ct.alm_loss(lp_t[:1, :1], lp_t[:1, :1] - 1)))
    # "sum": the masked chunks' sum, averaged over the 3 sequences
    assert float(ct.alm_loss(lp_t, lp_t - 1, mask)) == pytest.approx(
        float(ct.alm_loss(lp_t[:1, :1], lp_t[:1, :1] - 1)) / 3)
    with pytest.raises(ValueError, match="same shape"):
        ct.alm_loss(lp_t, lp_t[:, :2])
    with pytest.raises(ValueError, match="tau"):
        ct.alm_loss(lp_t, lp_t, tau=0)


def test_alm_loss_sums_over_chunks_and_validates_logprobs():
    lp_t = -torch.rand(2, 6, dtype=torch.float64) - 0.1
    lp_s = lp_t - 0.5
    per_chunk = ct.alm_loss(lp_t, lp_s, reduction="mean", tau=3.0)
    # the paper's loss sums over the chunks of a sequence (averaged over sequences)
    assert float(ct.alm_loss(lp_t, lp_s, tau=3.0)) == pytest.approx(6 * float(per_chunk))
    assert float(ct.alm_loss(lp_t[0], lp_s[0], tau=3.0)) == pytest.approx(
        float(ct.alm_loss(lp_t[:1], lp_s[:1], tau=3.0)))
    for bad in ("lp_t", "lp_s"):
        args = {"lp_t": lp_t.clone(), "lp_s": lp_s.clone()}
        args[bad][0, 0] = 0.3  # a positive "log-probability"
        with pytest.raises(ValueError, match=f"{bad} must hold log-probabilities"):
            ct.alm_loss(args["lp_t"], args["lp_s"])
    with pytest.raises(TypeError, match="lp_t must be a floating-point tensor"):
        ct.alm_loss([-1.0], lp_s)
    with pytest.raises(ValueError, match="reduction"):
        ct.alm_loss(lp_t, lp_s, reduction="max")


def test_uld_loss_ignores_token_identity():
    logits = torch.randn(1, 3, 7)
    p_sorted = logits.softmax(-1).sort(-1, descending=True).values
    mask = torch.ones(1, 3)
    assert float(ct.uld_loss(p_sorted, logits[..., torch.randperm(7)], mask)) == pytest.approx(0.0, abs=1e-6)
    # a larger teacher vocabulary is zero-padded on the student side
    p_t = torch.nn.functional.pad(p_sorted, (0, 3))
    assert float(ct.uld_loss(p_t, logits, mask)) == pytest.approx(0.0, abs=1e-6)
    assert float(ct.uld_loss(p_sorted, torch.zeros(1, 3, 7), mask)) > 0


def _levenshtein(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def test_mined_mapping_is_exact_or_nearest_by_edit_distance(toks):
    corpus, tok_s, _ = toks
    tok_t = build_tokenizer("bpe", ct.markov_corpus(300, seed=2), vocab_size=300)
    m = ct.mined_mapping(tok_t, tok_s)
    assert m.shape == (len(tok_s),) and m.dtype == torch.long
    vocab_t = tok_t.get_vocab()
    names_t = [t for t, i in vocab_t.items() if i not in tok_t.all_special_ids]
    n_inexact = 0
    for i, name in enumerate(tok_s.convert_ids_to_tokens(list(range(len(tok_s))))):
        mapped = tok_t.convert_ids_to_tokens(int(m[i]))
        if name in vocab_t:
            assert mapped == name  # shared strings (special tokens included) map to themselves
        else:
            n_inexact += 1
            assert _levenshtein(name, mapped) == min(_levenshtein(name, t) for t in names_t)
    assert n_inexact > 0  # the two vocabularies differ, so the nearest-string branch is exercised


def test_mined_loss_is_kl_at_one_to_one_tokens_and_cross_entropy_elsewhere():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 5)
    targets, mask = torch.randint(0, 5, (2, 4)), torch.ones(2, 4)
    own = (logits / 2.0).log_softmax(-1)  # the student's own distribution at T = 2: KL = 0
    ce = -own.gather(-1, targets[..., None])[..., 0]  # the one-hot target, also at T = 2
    none, every = torch.zeros(2, 4), torch.ones(2, 4)
    assert float(ct.mined_loss(own, logits, targets, none, mask)) == pytest.approx(float(ce.mean()), rel=1e-6)
    assert float(ct.mined_loss(own, logits, targets, every, mask)) == pytest.approx(0.0, abs=1e-6)
    # forward KL(q_T || p_S), not the reverse
    lq = torch.randn(2, 4, 5).log_softmax(-1)
    forward = (lq.exp() * (lq - own)).sum(-1).mean()
    reverse = (own.exp() * (own - lq)).sum(-1).mean()
    assert abs(float(forward - reverse)) > 1e-3
    assert float(ct.mined_loss(lq, logits, targets, every, mask)) == pytest.approx(float(forward), rel=1e-5)
    half = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1]])  # KL = 0 where one-to-one, CE elsewhere
    assert float(ct.mined_loss(own, logits, targets, half, mask)) == pytest.approx(
        float((ce * (1 - half)).sum() / 8), rel=1e-6)
    with pytest.raises(ValueError, match="logp_t and logits_s"):
        ct.mined_loss(own[:, :3], logits, targets, none, mask)
    with pytest.raises(ValueError, match="one_to_one must be"):
        ct.mined_loss(own, logits, targets, none[:, :3], mask)
    with pytest.raises(ValueError, match="temperature"):
        ct.mined_loss(own, logits, targets, none, mask, temperature=0)


def test_bits_per_byte_tokenizer_invariant(toks):
    # The same distribution written with two tokenizations: a byte model that puts all its mass on
    # each text's bytes has log p(text) = sum of per-byte log-probs; spread the same total over the
    # BPE tokens and the bits per byte agree.
    corpus, bpe, byte = toks
    texts = corpus[:10]
    logp = -torch.rand(len(texts)) * 20
    bpb = []
    for tok in (bpe, byte):
        ids = tok(texts, add_special_tokens=False)["input_ids"]
        total = sum(float(torch.full((len(x),), float(lp) / len(x)).sum()) for x, lp in zip(ids, logp))
        bpb.append(-total / math.log(2) / sum(len(t.encode()) for t in texts))
    assert bpb[0] == pytest.approx(bpb[1])
    with pytest.raises(ValueError, match="non-empty"):
        ct.bits_per_byte(None, bpe, [])


def test_fvt_and_transfer_model(toks):
    corpus, bpe, byte = toks
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=160)
    student = ct.transfer_model(teacher, bpe, byte)
    w_t, w_s = teacher.get_input_embeddings().weight, student.get_input_embeddings().weight
    assert w_s.shape == (len(byte), 16)
    # bytes are teacher tokens too: FVT copies their rows exactly
    a = byte.convert_tokens_to_ids("a")
    torch.testing.assert_close(w_s[a], w_t[bpe.convert_tokens_to_ids("a")])
    torch.testing.assert_close(w_s[1], w_t[1])  # <bos>
    assert torch.equal(student.lm_head.weight, w_s)  # tied head
    with pytest.raises(ValueError, match="teacher_emb"):
        ct.fvt_embeddings(torch.zeros(3, 4), bpe, byte)


def test_distill_smoke_and_chunk_gap(toks):
    corpus, bpe, _ = toks
    tok_s = build_tokenizer("bpe", corpus[::-1], vocab_size=300)
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    assert ct.chunk_gap(teacher, bpe, teacher, bpe, corpus[:5]) == pytest.approx(0.0, abs=1e-5)
    data = ct.DistillData(corpus[:32], teacher, bpe, tok_s)
    for method in ct.METHODS:
        student = ct.transfer_model(teacher, bpe, tok_s)
        run = ct.distill(student, data, method, steps=3, batch_size=8, tau=10.0, lr=1e-3)
        assert len(run.history) == 3 and all(math.isfinite(h) for h in run.history)
    # outcome-chunk debiasing: the teacher's word chunks carry log P(next token starts a word)
    space = ct.pretoken_start_ids(tok_s)
    assert all(tok_s.convert_ids_to_tokens(int(i)).startswith("Ġ") for i in space)
    item = data.items[0]
    assert item["word_end"][-1] == -1 and (item["word"][1] <= 0).all()
    assert len(item["word"][1]) <= len(item["fine"][1])
    rows = ct.chunk_table(teacher, bpe, student, tok_s, corpus[0])
    assert "".join(r["text"] for r in rows) == corpus[0]
    # MinED's one-to-one tokens: a student token whose bytes are exactly one teacher token's,
    # with the teacher's next-token log-probs at T = 2 carried through the vocabulary map
    (ids_t,), (ends_t,) = ct.token_byte_ends(bpe, [corpus[0]])
    (_,), (ends_s,) = ct.token_byte_ends(tok_s, [corpus[0]])
    spans_t = dict(zip(zip(np.r_[0, ends_t[:-1]], ends_t), range(len(ends_t))))
    k, lp = item["mined"]
    assert 0 < len(k) < len(ends_s) and lp.shape == (len(k), len(tok_s))
    with torch.no_grad():
        logits = teacher(input_ids=torch.tensor([[bpe.bos_token_id, *ids_t]])).logits[0]
    to_s = ct.mined_mapping(bpe, tok_s)
    for j, kk in enumerate(k.tolist()):
        i = spans_t[(np.r_[0, ends_s[:-1]][kk], ends_s[kk])]
        assert torch.allclose(lp[j], (logits[i, to_s] / 2.0).log_softmax(-1), atol=1e-5)
    assert math.isfinite(ct.bits_per_byte(student, tok_s, corpus[:4]))
    with pytest.raises(ValueError, match="method"):
        ct.CrossTokenizerDistiller(student, "dskd")
    with pytest.raises(TypeError, match="DistillData"):
        ct.distill(student, corpus, "alm")


def test_distill_data_and_training_run_on_the_given_device(toks, any_device):
    corpus, bpe, _ = toks
    tok_s = build_tokenizer("bpe", corpus[::-1], vocab_size=300)
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64).to(any_device)
    data = ct.DistillData(corpus[:16], teacher, bpe, tok_s)
    assert data.items[0]["fine"][1].device.type == "cpu"  # the dataset lives on the CPU
    student = ct.transfer_model(teacher, bpe, tok_s)
    assert student.get_input_embeddings().weight.device.type == any_device.type
    run = ct.distill(student, data, "alm", steps=2, batch_size=8, tau=10.0,
                     accelerator="gpu" if any_device.type == "cuda" else "cpu")
    assert len(run.history) == 2 and all(math.isfinite(h) for h in run.history)
    student.to(any_device)
    assert math.isfinite(ct.bits_per_byte(student, tok_s, corpus[:4]))
    assert ct.chunk_gap(teacher, bpe, student, tok_s, corpus[:4]) >= 0


def test_smoke_caps_distillation_steps(toks, monkeypatch):
    corpus, bpe, _ = toks
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    data = ct.DistillData(corpus[:16], teacher, bpe, bpe)
    monkeypatch.setenv("NEURIPS25_SMOKE", "1")
    assert len(ct.distill(ct.transfer_model(teacher, bpe, bpe), data, "sft", steps=50, batch_size=8).history) == 2


def test_entry_point_runs_from_a_gpt2_style_checkpoint(gpt2_style_checkpoint):
    from neurips25.lm import pretrained

    teacher, tok_t = pretrained(str(gpt2_style_checkpoint))
    assert tok_t.pad_token_id != 0 and tok_t.pad_token_id == tok_t.eos_token_id
    texts = ct.markov_corpus(24, length=(3, 5), seed=1)
    tok_s = build_tokenizer("bpe", texts, vocab_size=300)
    # a real checkpoint's specials (<|endoftext|>) are not the toolkit's: FVT maps them by role
    student = ct.transfer_model(teacher, tok_t, tok_s)
    w_t, w_s = teacher.get_input_embeddings().weight, student.get_input_embeddings().weight
    assert w_s.shape == (len(tok_s), w_t.shape[1])
    torch.testing.assert_close(w_s[tok_s.eos_token_id], w_t[tok_t.eos_token_id])
    data = ct.DistillData(texts, teacher, tok_t, tok_s)
    assert len(data) == 24 and all((it["word"][1] <= 0).all() for it in data.items)
    for method in ("alm", "uld", "mined"):
        s = ct.transfer_model(teacher, tok_t, tok_s)
        run = ct.distill(s, data, method, steps=2, batch_size=8, tau=10.0, accelerator="cpu")
        assert len(run.history) == 2 and all(math.isfinite(h) for h in run.history)
    bpb_t, bpb_s = ct.bits_per_byte(teacher, tok_t, texts[:4]), ct.bits_per_byte(s, tok_s, texts[:4])
    assert 0 < bpb_t < 20 and 0 < bpb_s < 20
    assert ct.chunk_gap(teacher, tok_t, s, tok_s, texts[:4]) >= 0
    # the other direction: the checkpoint's byte-level tokenizer as the student's
    back = ct.transfer_model(s, tok_s, tok_t)
    assert back.get_input_embeddings().weight.shape[0] == len(tok_t)
    assert len(ct.chunk_table(s, tok_s, back, tok_t, texts[0], debias=True)) == len(texts[0].split())


def test_seeds_small_is_the_stored_run():
    from neurips25.cross_tokenizer import METHODS
    from neurips25.cross_tokenizer_seeds import BYTE_DATA, BYTE_STEPS, BYTE_STEPS_METHODS, SEEDS
    from neurips25.results import load_results

    payload = load_results("cross_tokenizer_seeds")
    cfg, small = payload["data"]["settings"], SEEDS["small"]
    assert payload["slug"] == "cross_tokenizer_seeds" and cfg == small
    runs = payload["data"]["runs"]
    assert sorted(map(int, runs)) == small["seeds"]
    for r in runs.values():
        assert set(r) == {"teacher", "fvt", *METHODS}
        assert all(r[m]["bpb"] < r["fvt"]["bpb"] for m in METHODS)  # every method improves on FVT
        assert r["teacher"]["bpb"] < min(r[m]["bpb"] for m in METHODS)
    for r in payload["data"]["byte_runs"].values():  # the byte-level student, every method
        assert set(r) == {"teacher", "fvt", *METHODS} and r["teacher"] == runs["0"]["teacher"]
        assert all(r[m]["bpb"] < r["fvt"]["bpb"] for m in METHODS)
    steps = payload["data"]["byte_steps"]
    assert sorted(map(int, steps)) == small["seeds"]
    for s, by_n in steps.items():
        assert sorted(map(int, by_n)) == BYTE_STEPS and all(set(v) == set(BYTE_STEPS_METHODS) for v in by_n.values())
        # the 150-step point of the study is the stored 150-step byte run
        assert all(by_n["150"][m] == payload["data"]["byte_runs"][s][m]["bpb"] for m in BYTE_STEPS_METHODS)
    sizes = payload["data"]["byte_data"]  # steps in proportion to the transfer text: 128 sentences = 150 steps
    assert sorted(map(int, sizes)) == small["seeds"]
    for s, by_n in sizes.items():
        assert sorted(map(int, by_n)) == BYTE_DATA and str(small["n_transfer"]) in by_n
        assert by_n[str(small["n_transfer"])] == steps[s]["150"]


def test_seeds_cli_rejects_bad_step_counts():
    from neurips25.cross_tokenizer_seeds import main

    with pytest.raises(SystemExit):
        main(["--byte-steps", "0", "150"])
    with pytest.raises(SystemExit):
        main(["--byte-data", "0", "128"])
    with pytest.raises(SystemExit):
        main(["--byte-steps", "150", "--byte-data", "128"])
    with pytest.raises(ValueError, match="one size per entry"):
        from neurips25.cross_tokenizer_seeds import SEEDS, byte_steps_run

        byte_steps_run(0, SEEDS["small"], [150, 300], n_transfer=[128])
