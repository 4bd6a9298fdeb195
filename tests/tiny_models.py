"""Tiny, randomly initialised models of each architecture family, built on the fly into a directory.

Each family gets a model from its `transformers` config class (hidden size 32, 2 to 4 blocks, seeded) and a
tokenizer of the family's own kind trained here with the `tokenizers` library on a small built-in English
text list: WordPiece for BERT/DistilBERT/ELECTRA, byte-level BPE for RoBERTa/BART, Unigram (SentencePiece
style) for ALBERT/XLNet/DeBERTa-v2/T5, and XLM's own BPE files. The special tokens sit where the family
puts them (`[CLS] ... [SEP]`, `<s> ... </s>`, `... <sep> <cls>`, `... </s>`) and `model_max_length` is set,
so `AutoTokenizer.from_pretrained(dir)` gives the family's tokenizer class and `AutoModel.from_pretrained(dir)`
the family's model. Nothing is downloaded.

`build_tiny_model(family, root)` writes one model under `root` and returns its directory; the directory
name holds the family name (`tiny-t5` contains "t5", which the reference needs to pick `T5EncoderModel`).

`MODERN` holds three newer encoders that the reference predates, built the same way: ModernBERT (rotary
positions, a window of 8192 tokens, alternating global and local attention layers, a final norm), EuroBERT
(rotary, 8192, a final RMS norm; its tokenizer knows no maximum length, so the window comes from the config) and
DeBERTa-v3 (a deberta-v2 config with relative positions only, and a tokenizer that knows no maximum length).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The built-in training text: enough English to give every tokenizer a few hundred pieces.
CORPUS: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the street corner.",
    "The weather today is sunny with a light breeze from the west.",
    "She read the book twice before she returned it to the library.",
    "Machine translation systems are evaluated against human references.",
    "The cat sat on the mat and looked out of the window.",
    "Two children were playing football in the park after school.",
    "He said that the meeting would start at nine in the morning.",
    "The government announced new measures to support small businesses.",
    "Scientists have discovered a new species of frog in the rainforest.",
    "I would like a cup of coffee with milk and no sugar, please.",
    "The train to London was delayed by twenty minutes this evening.",
    "Hello world, this is a short sentence for testing.",
    "hello there, how are you doing today?",
    "The committee will publish its report at the end of the year.",
    "Prices rose sharply in the first quarter, according to the survey.",
    "Our team won the match by three goals to one.",
    "Please remember to close the door when you leave the room.",
    "The museum is open every day except Monday.",
    "Researchers measured the similarity between candidate and reference sentences.",
    "A woman is slicing an onion in the kitchen.",
    "The river flooded the village after days of heavy rain.",
    "Students should submit their essays before the deadline on Friday.",
    "The old bridge was closed for repairs last summer.",
    "Good morning! The shop opens at eight o'clock.",
    "Every model has its own tokenizer and its own special tokens.",
    "The president met the prime minister to discuss trade and security.",
    "They walked along the beach and watched the sun go down.",
    "Numbers like 42, 1999 and 3.14 appear in text as well.",
    "It was the best of times, it was the worst of times.",
    "We said hello to the new neighbours and they said hello back.",
)

HIDDEN = 32
HEADS = 2
FFN = 37
#: The tokenizers' window; the models' position tables are at least this long.
MAX_LENGTH = 64
SEED = 0


@dataclass(frozen=True)
class Family:
    """How to build one family's tiny model and tokenizer."""

    name: str
    depth: int
    make_config: Callable[[int, int], Any]  # (vocab size, depth) -> config
    make_tokenizer: Callable[[Path], Any]  # work dir -> a saved-able tokenizer (or None: files written)
    encoder_decoder: bool = False


# -- tokenizers ---------------------------------------------------------------------------------------


def _model_json(tok: Any) -> dict[str, Any]:
    return json.loads(tok.to_str())["model"]


def _wordpiece_vocab(specials: list[str], lowercase: bool, size: int = 400) -> dict[str, int]:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import WordPiece

    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok.get_vocab()


def _byte_bpe(specials: list[str], size: int = 500) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, pre_tokenizers, trainers
    from tokenizers.models import BPE

    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    model = _model_json(tok)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges  # type: ignore[return-value]


def _unigram(specials: list[str], unk: str, lowercase: bool = False, size: int = 300) -> list[tuple[str, float]]:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import Unigram

    tok = Tokenizer(Unigram())
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=size, special_tokens=specials, unk_token=unk, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return [(piece, float(score)) for piece, score in _model_json(tok)["vocab"]]


def _bert_tokenizer(cls_name: str, lowercase: bool = True) -> Callable[[Path], Any]:
    def make(_: Path) -> Any:
        import transformers

        vocab = _wordpiece_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], lowercase)
        return getattr(transformers, cls_name)(vocab=vocab, do_lower_case=lowercase, model_max_length=MAX_LENGTH)

    return make


def _roberta_tokenizer(_: Path) -> Any:
    from transformers import RobertaTokenizer

    vocab, merges = _byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return RobertaTokenizer(vocab=vocab, merges=merges, model_max_length=MAX_LENGTH)


def _albert_tokenizer(_: Path) -> Any:
    from transformers import AlbertTokenizer

    vocab = _unigram(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "<unk>", lowercase=True)
    return AlbertTokenizer(vocab=vocab, model_max_length=MAX_LENGTH)


def _xlnet_tokenizer(_: Path) -> Any:
    from transformers import XLNetTokenizer

    vocab = _unigram(["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"], "<unk>")
    return XLNetTokenizer(vocab=vocab, model_max_length=MAX_LENGTH)


def _deberta_v2_tokenizer(_: Path) -> Any:
    from transformers import DebertaV2Tokenizer

    vocab = _unigram(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], "[UNK]")
    return DebertaV2Tokenizer(vocab=vocab, model_max_length=MAX_LENGTH)


def _deberta_v3_tokenizer(_: Path) -> Any:
    """As DeBERTa-v3's own: no model_max_length, so nothing but the model limits the length."""
    from transformers import DebertaV2Tokenizer

    vocab = _unigram(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], "[UNK]")
    return DebertaV2Tokenizer(vocab=vocab)


def _fast_bpe_tokenizer(first: str, last: str, specials: dict[str, str], **kwargs: Any) -> Any:
    """A byte-level BPE `PreTrainedTokenizerFast` that wraps each text in `first ... last` (ModernBERT and
    EuroBERT ship such generic fast tokenizers, not a class of their own)."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    vocab, merges = _byte_bpe(list(dict.fromkeys(specials.values())))
    tok = Tokenizer(BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{first} $A {last}", special_tokens=[(first, vocab[first]), (last, vocab[last])]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, **specials, **kwargs)


def _modernbert_tokenizer(_: Path) -> Any:
    specials = {
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    return _fast_bpe_tokenizer("[CLS]", "[SEP]", specials, model_max_length=8192)


def _eurobert_tokenizer(_: Path) -> Any:
    specials = {
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|end_of_text|>",
        "pad_token": "<|pad|>",
        "mask_token": "<|mask|>",
    }
    return _fast_bpe_tokenizer("<|begin_of_text|>", "<|end_of_text|>", specials)


def _t5_tokenizer(_: Path) -> Any:
    from transformers import T5Tokenizer

    extra = 4
    vocab = _unigram(["<pad>", "</s>", "<unk>"], "<unk>")
    vocab += [(f"<extra_id_{i}>", 0.0) for i in range(extra - 1, -1, -1)]
    return T5Tokenizer(vocab=vocab, extra_ids=extra, model_max_length=MAX_LENGTH)


def _xlm_tokenizer(work: Path) -> Any:
    """XLM's own files: a vocab.json and merges.txt in its `</w>` BPE format (the tokenizer is Python-only
    and needs `sacremoses`; the files are written whether or not it is installed)."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE

    specials = ["<s>", "</s>", "<pad>", "<unk>"] + [f"<special{i}>" for i in range(10)]
    tok = Tokenizer(BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials, end_of_word_suffix="</w>", show_progress=False
    )
    tok.train_from_iterator(CORPUS, trainer)
    model = _model_json(tok)
    work.mkdir(parents=True, exist_ok=True)
    (work / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    merges = [" ".join(m) if not isinstance(m, str) else m for m in model["merges"]]
    (work / "merges.txt").write_text("\n".join(merges) + "\n", encoding="utf-8")
    (work / "tokenizer_config.json").write_text(
        json.dumps(
            {"tokenizer_class": "XLMTokenizer", "model_max_length": MAX_LENGTH, "do_lowercase_and_remove_accent": True}
        ),
        encoding="utf-8",
    )
    return None


# -- configs ------------------------------------------------------------------------------------------


def _bert_config(vocab: int, depth: int) -> Any:
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=MAX_LENGTH,
        pad_token_id=0,
    )


def _roberta_config(vocab: int, depth: int) -> Any:
    from transformers import RobertaConfig

    return RobertaConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=MAX_LENGTH + 2,  # RoBERTa's positions start after pad
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        type_vocab_size=1,
    )


def _distilbert_config(vocab: int, depth: int) -> Any:
    from transformers import DistilBertConfig

    return DistilBertConfig(
        vocab_size=vocab, dim=HIDDEN, n_layers=depth, n_heads=HEADS, hidden_dim=FFN, max_position_embeddings=MAX_LENGTH
    )


def _albert_config(vocab: int, depth: int) -> Any:
    from transformers import AlbertConfig

    return AlbertConfig(
        vocab_size=vocab,
        embedding_size=16,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_hidden_groups=1,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=MAX_LENGTH,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    )


def _xlnet_config(vocab: int, depth: int) -> Any:
    from transformers import XLNetConfig

    return XLNetConfig(
        vocab_size=vocab,
        d_model=HIDDEN,
        n_layer=depth,
        n_head=HEADS,
        d_inner=FFN,
        pad_token_id=5,
        bos_token_id=1,
        eos_token_id=2,
    )


def _xlm_config(vocab: int, depth: int) -> Any:
    from transformers import XLMConfig

    return XLMConfig(
        vocab_size=vocab,
        emb_dim=HIDDEN,
        n_layers=depth,
        n_heads=HEADS,
        max_position_embeddings=MAX_LENGTH,
        pad_index=2,
        eos_index=1,
        unk_index=3,
        bos_token_id=0,
        pad_token_id=2,
        use_lang_emb=False,
        n_langs=1,
    )


def _electra_config(vocab: int, depth: int) -> Any:
    from transformers import ElectraConfig

    return ElectraConfig(
        vocab_size=vocab,
        embedding_size=16,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=MAX_LENGTH,
        pad_token_id=0,
    )


def _deberta_v2_config(vocab: int, depth: int) -> Any:
    from transformers import DebertaV2Config

    return DebertaV2Config(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=MAX_LENGTH,
        relative_attention=True,
        position_buckets=16,
        max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
        share_att_key=True,
        pad_token_id=0,
        type_vocab_size=0,
    )


def _deberta_v3_config(vocab: int, depth: int) -> Any:
    """DeBERTa-v3's settings: relative positions only (no absolute position table), 256 log buckets over 512."""
    from transformers import DebertaV2Config

    return DebertaV2Config(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=256,
        max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
        share_att_key=True,
        pad_token_id=0,
        type_vocab_size=0,
    )


def _modernbert_config(vocab: int, depth: int) -> Any:
    """ModernBERT's layout: global attention every third layer, local (sliding window) attention between;
    the window is 16 tokens here (128 in the real model) so that short test texts already go past it."""
    from transformers import ModernBertConfig

    return ModernBertConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=8192,
        local_attention=16,
        pad_token_id=2,
        cls_token_id=0,
        sep_token_id=1,
        bos_token_id=0,
        eos_token_id=1,
    )


def _eurobert_config(vocab: int, depth: int) -> Any:
    from transformers import EuroBertConfig

    return EuroBertConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=depth,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=8192,
        pad_token_id=2,
        bos_token_id=0,
        eos_token_id=1,
        mask_token_id=3,
    )


def _bart_config(vocab: int, depth: int) -> Any:
    from transformers import BartConfig

    return BartConfig(
        vocab_size=vocab,
        d_model=HIDDEN,
        encoder_layers=depth,
        decoder_layers=1,
        encoder_attention_heads=HEADS,
        decoder_attention_heads=HEADS,
        encoder_ffn_dim=FFN,
        decoder_ffn_dim=FFN,
        max_position_embeddings=MAX_LENGTH,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
    )


def _t5_config(vocab: int, depth: int) -> Any:
    from transformers import T5Config

    return T5Config(
        vocab_size=vocab,
        d_model=HIDDEN,
        d_kv=16,
        d_ff=FFN,
        num_layers=depth,
        num_decoder_layers=1,
        num_heads=HEADS,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("bert", 4, _bert_config, _bert_tokenizer("BertTokenizer")),
        Family("roberta", 3, _roberta_config, _roberta_tokenizer),
        Family("distilbert", 2, _distilbert_config, _bert_tokenizer("DistilBertTokenizer")),
        Family("albert", 3, _albert_config, _albert_tokenizer),
        Family("xlnet", 3, _xlnet_config, _xlnet_tokenizer),
        Family("xlm", 3, _xlm_config, _xlm_tokenizer),
        Family("electra", 3, _electra_config, _bert_tokenizer("BertTokenizer")),
        Family("deberta-v2", 3, _deberta_v2_config, _deberta_v2_tokenizer),
        Family("bart", 3, _bart_config, _roberta_tokenizer, encoder_decoder=True),
        Family("t5", 3, _t5_config, _t5_tokenizer, encoder_decoder=True),
    )
}


#: Encoders newer than the reference (not in FAMILIES, which tests/parity/test_architectures.py compares with it).
MODERN: dict[str, Family] = {
    f.name: f
    for f in (
        Family("modernbert", 4, _modernbert_config, _modernbert_tokenizer),
        Family("eurobert", 3, _eurobert_config, _eurobert_tokenizer),
        Family("deberta-v3", 3, _deberta_v3_config, _deberta_v3_tokenizer),
    )
}


def _perturb_norms(model: Any) -> None:
    """Give every norm layer weights other than 1 (and biases other than 0), as trained models have.

    Freshly initialised norms scale all dimensions alike, which leaves cosine similarities unchanged and
    would hide whether a norm (such as T5's final_layer_norm) is applied or not.
    """
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            leaf = name.lower()
            if "norm" in leaf and leaf.endswith("weight"):
                param.uniform_(0.5, 1.5)
            elif "norm" in leaf and leaf.endswith("bias"):
                param.normal_(0.0, 0.1)


def with_prefix_space_tokenizer(model_dir: Path) -> Path:
    """A sibling of a byte-level BPE model directory whose saved tokenizer adds the prefix space itself.

    bert-score under transformers 5 passes `add_prefix_space=True` to `encode()`, where the fast tokenizer
    drops it; a tokenizer saved with the option applies it whatever the call says, so the reference then
    tokenises as it intends to (and as the published baselines assume).
    """
    import shutil

    from transformers import AutoTokenizer

    model_dir = Path(model_dir)
    out = model_dir.with_name(model_dir.name + "-prefix-space")
    if out.is_dir():
        return out
    out.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(model_dir / name, out / name)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), add_prefix_space=True)
    tokenizer.save_pretrained(str(out))
    return out


def build_tiny_model(family: str, root: Path, depth: int | None = None) -> Path:
    """Write the tiny `family` model and its tokenizer to `root / "tiny-<family>"` (`depth` blocks, else the
    family's); return that directory."""
    import torch
    from transformers import AutoModel

    spec = FAMILIES[family] if family in FAMILIES else MODERN[family]
    out = Path(root) / (f"tiny-{family}" if depth is None else f"tiny-{family}-{depth}")
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = spec.make_tokenizer(out)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
        vocab_size = len(tokenizer)
    else:
        vocab_size = len(json.loads((out / "vocab.json").read_text(encoding="utf-8")))
    config = spec.make_config(vocab_size, spec.depth if depth is None else depth)
    torch.manual_seed(SEED)
    model = AutoModel.from_config(config)
    _perturb_norms(model)
    model.eval()
    model.save_pretrained(str(out))
    return out


def tiny_encoder(model_type: str) -> Any:
    """A tiny random encoder of `model_type` (hidden size 32, 3 blocks, 120 ids, pad id 1; the family's own
    position scheme), built in memory from its config class with no tokenizer: for tests that run token ids
    straight through the model. Frozen and in eval mode, float32."""
    import torch
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(0)
    config = AutoConfig.for_model(
        model_type,
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=80,
        pad_token_id=1,
    )
    return AutoModel.from_config(config).eval().requires_grad_(False)
