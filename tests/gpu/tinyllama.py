"""TinyLlama-1.1B's shape (22 layers, hidden 2048, GQA 32/4, SwiGLU 5632, vocabulary 32000):
the Llama-style decoder that hf_loop.py, hf_generate.py and hf_styles.py build with random
weights, defined once. transformers.LlamaConfig(**TINYLLAMA)."""

TINYLLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                 num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                 max_position_embeddings=4096)


def paged_model(requests, rng, config_out=None):
    """The decoder with transformers' paged attention (its continuous batching), random bf16
    weights (torch seed 0), its config.json written to CONFIG_OUT; and REQUESTS random prompts
    of 64-511 tokens drawn from RNG (a random.Random). Returns (model, prompts)."""
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**TINYLLAMA)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(
            cfg, dtype=torch.bfloat16, attn_implementation="paged|sdpa").eval()
    if config_out:
        model.config.to_json_file(config_out)
    prompts = [[rng.randrange(3, cfg.vocab_size) for _ in range(rng.randint(64, 511))]
               for _ in range(requests)]
    return model, prompts
