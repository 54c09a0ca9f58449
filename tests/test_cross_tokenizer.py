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


def _dskd_sides(B=2, N=5, Nt=4, d_s=6, d_t=8, V_s=11, V_t=13, seed=0):
    g = torch.Generator().manual_seed(seed)
    side = {}
    for name, n, d, V in (("student", N, d_s, V_s), ("teacher", Nt, d_t, V_t)):
        mask = torch.ones(B, n)
        mask[1:, n - 1:] = 0  # the sequences after the first are one token shorter
        side[name] = {"input": torch.randint(V, (B, n), generator=g), "target": torch.randint(V, (B, n), generator=g),
                      "mask": mask, "hidden": torch.randn(B, n, d, generator=g),
                      "logits": torch.randn(B, n, V, generator=g), "embed": torch.randn(V, d, generator=g),
                      "head": torch.randn(V, d, generator=g)}
    return side["student"], side["teacher"]


def test_dskd_loss_ignores_padding_and_trains_the_student_and_all_projectors():
    torch.manual_seed(0)
    proj = ct.DSKDProjectors(6, 8)
    S, T = _dskd_sides()
    S["hidden"].requires_grad_(True)
    S["logits"].requires_grad_(True)
    S["head"].requires_grad_(True)
    loss = ct.dskd_loss(proj, S, T)
    assert torch.isfinite(loss) and loss > 0
    loss.backward()
    for p in (proj.query.weight, proj.t2s.weight, proj.s2t.weight, S["hidden"], S["logits"]):
        assert p.grad is not None and p.grad.abs().sum() > 0
    assert S["head"].grad is None  # the student's head only reads the teacher-side states (detached)
    # padded positions (mask 0), whatever they hold, change nothing
    S2, T2 = _dskd_sides()
    for side in (S2, T2):
        for k in ("hidden", "logits"):
            side[k] = torch.cat([side[k], 100 * torch.randn(side[k].shape[0], 2, *side[k].shape[2:])], 1)
        for k in ("input", "target"):
            side[k] = torch.cat([side[k], torch.zeros(side[k].shape[0], 2, dtype=torch.long)], 1)
        side["mask"] = torch.cat([side["mask"], torch.zeros(side["mask"].shape[0], 2)], 1)
    S3, T3 = _dskd_sides()
    torch.testing.assert_close(ct.dskd_loss(proj, S2, T2), ct.dskd_loss(proj, S3, T3))


def _dskd_reference(proj, S, T, temperature=2.0, skew=0.1):
    """DSKD for ONE unpadded sequence pair, written out position by position from the official
    definition (tokenkit's compute_baseline_dskd_loss): an independent check of dskd_loss's maths."""
    def cat(E, x, y):
        return torch.cat([E[x], E[y]], -1)

    n, nt = len(S["input"]), len(T["input"])
    idx_t = torch.stack([cat(T["embed"], T["input"][j], T["target"][j]) for j in range(nt)])
    tgt_t = torch.stack([T["embed"][T["target"][j]] for j in range(nt)])
    key = idx_t / idx_t.std()
    val_t = proj.t2s(T["hidden"] / T["hidden"].std() + tgt_t / tgt_t.std())
    q = torch.stack([proj.query(cat(S["embed"], S["input"][i], S["target"][i])) for i in range(n)])
    align = q @ key.T / (2 * T["hidden"].shape[-1]) ** 0.5
    ce, kd, n_right, s2t_kd = 0.0, 0.0, 0, 0.0
    for i in range(n):
        z = torch.softmax(align[i], 0) @ val_t @ S["head"].T  # the teacher read in the student's space
        y = int(S["target"][i])
        ce = ce - torch.log_softmax(z, 0)[y] / n
        if int(z.argmax()) == y:
            p_s = torch.softmax(S["logits"][i] / temperature, 0)
            mix = (1 - skew) * torch.softmax(z / temperature, 0) + skew * p_s
            kd = kd + (p_s * (p_s.log() - (mix + 1e-9).log())).sum()
            n_right += 1
    val_s = proj.s2t(S["hidden"])
    for j in range(nt):
        z = torch.softmax(align[:, j], 0) @ val_s @ T["head"].T  # the student read in the teacher's space
        p_t = torch.softmax(T["logits"][j] / temperature, 0)
        s2t_kd = s2t_kd + (p_t * (p_t.log() - torch.log_softmax(z / temperature, 0))).sum() / nt
    return ce + kd / max(n_right, 1e-8) + s2t_kd


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dskd_loss_matches_the_official_definition_written_out(seed):
    torch.manual_seed(seed)
    proj = ct.DSKDProjectors(6, 8)
    S, T = _dskd_sides(B=1, N=30, Nt=20, V_s=5, V_t=7, seed=seed)  # small V_s: t2s is often right
    # make the teacher read in the student's space right at some positions, so the KD term is non-empty
    S["head"] = S["head"] * 4
    one = {k: (v[0] if k not in ("embed", "head") else v) for k, v in S.items()}
    one_t = {k: (v[0] if k not in ("embed", "head") else v) for k, v in T.items()}
    one["mask"], one_t["mask"] = torch.ones_like(one["mask"]), torch.ones_like(one_t["mask"])
    full = {**S, "mask": torch.ones_like(S["mask"])}
    full_t = {**T, "mask": torch.ones_like(T["mask"])}
    ref = _dskd_reference(proj, one, one_t)
    torch.testing.assert_close(ct.dskd_loss(proj, full, full_t), ref, rtol=1e-5, atol=1e-6)
    # skew and temperature are the ones asked for
    torch.testing.assert_close(ct.dskd_loss(proj, full, full_t, temperature=1.0, skew=0.3),
                               _dskd_reference(proj, one, one_t, temperature=1.0, skew=0.3), rtol=1e-5, atol=1e-6)


def test_dskd_training_step_aligns_each_position_with_its_target(toks, monkeypatch):
    corpus, bpe, _ = toks
    tok_s = build_tokenizer("bpe", corpus[::-1], vocab_size=300)
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    data = ct.DistillData(corpus[:8], teacher, bpe, tok_s)
    seen = []
    real = ct.dskd_loss
    def spy(proj, s, t, **kw):  # a copy of what training_step passes, before the optimizer step moves it
        seen.append(tuple({k: v.detach().clone() for k, v in d.items()} for d in (s, t)))
        return real(proj, s, t, **kw)

    monkeypatch.setattr(ct, "dskd_loss", spy)
    student = ct.transfer_model(teacher, bpe, tok_s)
    ct.distill(student, data, "dskd", steps=1, batch_size=8, accelerator="cpu")
    (S, T), = seen
    # the student's hidden state at position k, read by its head, gives the logits that predict target k
    torch.testing.assert_close(S["hidden"] @ S["head"].T, S["logits"], rtol=1e-4, atol=1e-4)
    assert torch.equal(S["input"][:, 1:], S["target"][:, :-1]) and (S["input"][:, 0] == tok_s.bos_token_id).all()
    # the teacher's side likewise, from DistillData: hidden · head = the stored next-token logits
    torch.testing.assert_close(T["hidden"] @ T["head"].T, T["logits"], rtol=1e-4, atol=1e-4)
    assert torch.equal(T["input"][:, 1:] * T["mask"][:, 1:].long(), T["target"][:, :-1] * T["mask"][:, 1:].long())
    with pytest.raises(ValueError, match="teacher_embed"):  # outside distill(): a clear error, not a TypeError
        module = ct.CrossTokenizerDistiller(ct.transfer_model(teacher, bpe, tok_s), "dskd", teacher_dim=16)
        module.on_fit_start()


def test_dskd_inputs_are_validated(toks):
    proj = ct.DSKDProjectors(6, 8)
    S, T = _dskd_sides()
    with pytest.raises(ValueError, match="teacher is missing"):
        ct.dskd_loss(proj, S, {k: v for k, v in T.items() if k != "head"})
    with pytest.raises(ValueError, match="student: hidden"):
        ct.dskd_loss(proj, {**S, "hidden": S["hidden"][:, :-1]}, T)
    with pytest.raises(ValueError, match="skew"):
        ct.dskd_loss(proj, S, T, skew=1.0)
    with pytest.raises(ValueError, match="temperature"):
        ct.dskd_loss(proj, S, T, temperature=0)
    with pytest.raises(ValueError, match="student: input"):
        ct.dskd_loss(proj, {**S, "target": S["target"][:, :-1]}, T)
    with pytest.raises(ValueError, match="d_t"):
        ct.DSKDProjectors(6, True)
    corpus, bpe, _ = toks
    teacher = tiny_model(bpe, n_layer=2, n_embd=16, n_head=2, n_positions=64)
    with pytest.raises(ValueError, match="teacher_dim"):
        ct.CrossTokenizerDistiller(ct.transfer_model(teacher, bpe, bpe), "dskd")
    assert len(ct.truncated_student(teacher, bpe, bpe, 1).transformer.h) == 1
    with pytest.raises(ValueError, match="n_layer"):
        ct.truncated_student(teacher, bpe, bpe, 3)


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
    # DSKD: the teacher's own sequence with its last hidden states and next-token logits
    ids_dk, hid, z = item["dskd"]
    assert ids_dk.tolist() == ids_t and hid.shape == (len(ids_t), 16) and z.shape == (len(ids_t), len(bpe))
    torch.testing.assert_close(z, logits[:-1], atol=1e-5, rtol=1e-5)
    batch = data.collate(data.items[:2])
    assert batch["t_input"][0, 0] == bpe.bos_token_id and batch["t_input"][0, 1:len(ids_t)].tolist() == ids_t[:-1]
    assert batch["t_target"][0, :len(ids_t)].tolist() == ids_t and batch["t_mask"][0].sum() == len(ids_t)
    # collated for one method: only what it reads, identical to the full batch's tensors
    own = {"sft": set(), "uld": {"uld_p_t", "uld_mask"}, "mined": {"mined_lp_t", "mined_one_to_one"},
           "dskd": {"t_input", "t_target", "t_mask", "t_hidden", "t_logits"}}
    for method, keys in own.items():
        part = data.collate(data.items[:2], method=method)
        assert set(batch) - set(part) == set().union(*own.values()) - keys
        assert all(torch.equal(v, batch[k]) for k, v in part.items())
    with pytest.raises(ValueError, match="method"):
        data.loader(2, method="bogus")
    assert math.isfinite(ct.bits_per_byte(student, tok_s, corpus[:4]))
    with pytest.raises(ValueError, match="method"):
        ct.CrossTokenizerDistiller(student, "bogus")
    with pytest.raises(TypeError, match="DistillData"):
        ct.distill(student, corpus, "alm")


def test_gradmag_weights_equalise_the_terms_push_on_the_last_block(toks):
    corpus, bpe, _ = toks
    model = tiny_model(bpe, n_layer=2, n_embd=16, n_head=2, n_positions=64)
    x = torch.tensor([bpe(corpus[0])["input_ids"][:20]])
    lp = ct.token_logprobs(model, x, torch.ones_like(x))
    a, b = -lp.mean(), 5.0 * (lp ** 2).mean()  # two terms with very different gradient sizes
    params = list(ct.last_block(model).parameters())
    assert all(p is q for p, q in zip(params, model.transformer.h[-1].parameters()))
    w = ct.gradmag_weights([a, b], params)
    assert w.sum().item() == pytest.approx(1.0) and not w.requires_grad
    norms = [torch.cat([g.flatten() for g in torch.autograd.grad(wi * t, params, retain_graph=True)]).norm()
             for wi, t in zip(w, (a, b))]
    assert norms[0].item() == pytest.approx(norms[1].item(), rel=1e-4)  # equal push on the probe layer
    # scale-free: multiplying a term by a constant leaves the mix of the two gradients unchanged
    w3 = ct.gradmag_weights([a, 3.0 * b], params)
    assert (w3[0] / (3.0 * w3[1])).item() == pytest.approx((w[0] / w[1]).item(), rel=1e-5)
    assert ct.gradmag_weights([a], params).item() == pytest.approx(1.0)  # one term: the plain loss
    with pytest.raises(ValueError, match="losses"):
        ct.gradmag_weights([], params)
    with pytest.raises(ValueError, match="scalar"):
        ct.gradmag_weights([lp], params)
    with pytest.raises(ValueError, match="params"):
        ct.gradmag_weights([a], [])
    with pytest.raises(TypeError, match="transformer blocks"):
        ct.last_block(torch.nn.Linear(2, 2))


def test_gradmag_balance_changes_only_two_term_objectives(toks):
    corpus, bpe, _ = toks
    tok_s = build_tokenizer("bpe", corpus[::-1], vocab_size=300)
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    data = ct.DistillData(corpus[:32], teacher, bpe, tok_s)
    hist = {}
    for method in ("sft", "alm", "alm+sft"):
        for balance in ct.BALANCES:
            run = ct.distill(ct.transfer_model(teacher, bpe, tok_s), data, method, steps=3, batch_size=8, tau=10.0,
                             balance=balance, accelerator="cpu")
            hist[method, balance] = run.history
    assert hist["sft", "sum"] == hist["sft", "gradmag"] and hist["alm", "sum"] == hist["alm", "gradmag"]
    # a convex combination of the two terms is smaller than their sum
    assert all(g < s for g, s in zip(hist["alm+sft", "gradmag"], hist["alm+sft", "sum"]))
    with pytest.raises(ValueError, match="balance"):
        ct.CrossTokenizerDistiller(teacher, "alm", balance="mean")


def test_expanded_inputs_add_the_longest_teacher_token_ending_at_each_byte(toks):
    corpus, bpe, byte = toks
    teacher = tiny_model(bpe, n_layer=1, n_embd=16, n_head=2, n_positions=64)
    student = ct.expand_inputs(ct.transfer_model(teacher, bpe, byte), teacher, bpe, byte)
    emb = student.get_input_embeddings()
    assert isinstance(emb, ct.ExpandedEmbedding) and student.lm_head.weight is emb.weight
    ids = torch.tensor([[byte.bos_token_id, *byte(corpus[0] + " " + corpus[1])["input_ids"]]])
    got = emb.expansion(ids)[0].tolist()
    # brute force: the longest teacher token whose characters are the last bytes before each position
    pieces = {p: t for t, p in enumerate(bpe.convert_ids_to_tokens(list(range(len(bpe)))))
              if t not in bpe.all_special_ids}
    chars = byte.convert_ids_to_tokens(ids[0].tolist())
    for i, g in enumerate(got):
        best = None
        for k in range(1, i + 1):
            if "".join(chars[i - k + 1:i + 1]) in pieces and byte.bos_token_id not in ids[0, i - k + 1:i + 1]:
                best = pieces["".join(chars[i - k + 1:i + 1])]
        assert g == (best if best is not None else len(bpe)), (i, chars[:i + 1])
    assert got[0] == len(bpe) and len({g for g in got if g < len(bpe)}) > 5
    x = emb(ids)
    torch.testing.assert_close(x, emb.embed(ids) + emb.sub(emb.expansion(ids)))
    torch.testing.assert_close(emb.sub.weight[:-1], teacher.get_input_embeddings().weight)
    assert (emb.sub.weight[-1] == 0).all()
    data = ct.DistillData(corpus[:16], teacher, bpe, byte)
    run = ct.distill(student, data, "alm+sft", steps=2, batch_size=8, tau=10.0, accelerator="cpu")
    assert all(math.isfinite(h) for h in run.history) and math.isfinite(ct.bits_per_byte(student, byte, corpus[:4]))
    with pytest.raises(ValueError, match="already expanded"):
        ct.expand_inputs(student, teacher, bpe, byte)
    with pytest.raises(TypeError, match="embed"):
        ct.ExpandedEmbedding(torch.nn.Linear(2, 2), torch.zeros(3, 2), {0: [5]})
    with pytest.raises(ValueError, match="sub_embed"):
        ct.ExpandedEmbedding(torch.nn.Embedding(4, 2), torch.zeros(3, 5), {0: [1]})
    with pytest.raises(ValueError, match="pieces"):
        ct.ExpandedEmbedding(torch.nn.Embedding(4, 2), torch.zeros(3, 2), {})


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
    for method in ("alm", "uld", "mined", "dskd"):
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
    from neurips25.cross_tokenizer_seeds import SMALL_METHODS

    for s, r in payload["data"]["small_runs"].items():  # large → small: 1-layer student, its own start
        assert set(r) == {"teacher", "init", *SMALL_METHODS} and r["teacher"] == runs[s]["teacher"]
        assert all(r[m]["bpb"] < r["init"]["bpb"] for m in SMALL_METHODS)
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
    from neurips25.cross_tokenizer_seeds import GRADMAG_BYTE_METHODS, GRADMAG_METHODS

    gm = payload["data"]["gradmag"]  # GradMag study: the chapter's seeds and fresh seeds 3-5
    assert sorted(map(int, gm)) == [*small["seeds"], 3, 4, 5]
    for s, r in gm.items():
        assert set(r["bpe"]) == set(GRADMAG_METHODS) and set(r["byte"]) == set(GRADMAG_BYTE_METHODS)
        if s in payload["data"]["byte_runs"]:  # one-term SFT: the same under both balances
            assert r["byte"]["sft"]["bpb"] == pytest.approx(payload["data"]["byte_runs"][s]["sft"]["bpb"], abs=1e-4)
    from neurips25.cross_tokenizer_seeds import EXPAND_METHODS

    ex = payload["data"]["byte_expand"]  # byte level with expanded inputs: seed 0 and fresh seeds 1-5
    assert sorted(map(int, ex)) == [0, 1, 2, 3, 4, 5]
    for r in ex.values():
        assert set(r) == {"fvt", *EXPAND_METHODS} and all(r[m]["bpb"] < r["fvt"]["bpb"] for m in EXPAND_METHODS)


def test_seeds_cli_rejects_bad_step_counts():
    from neurips25.cross_tokenizer_seeds import main

    with pytest.raises(SystemExit):
        main(["--byte-steps", "0", "150"])
    with pytest.raises(SystemExit):
        main(["--byte-data", "0", "128"])
    with pytest.raises(SystemExit):
        main(["--byte-steps", "150", "--byte-data", "128"])
    with pytest.raises(SystemExit):
        main(["--gradmag", "--byte-steps", "150"])
    with pytest.raises(SystemExit):
        main(["--byte-expand", "--gradmag"])
    with pytest.raises(ValueError, match="one size per entry"):
        from neurips25.cross_tokenizer_seeds import SEEDS, byte_steps_run

        byte_steps_run(0, SEEDS["small"], [150, 300], n_transfer=[128])
