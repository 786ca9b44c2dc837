"""TinyLlama-1.1B's shape (22 layers, hidden 2048, GQA 32/4, SwiGLU 5632, vocabulary 32000):
the Llama-style decoder that hf_loop.py, hf_generate.py and hf_styles.py build with random
weights, defined once. transformers.LlamaConfig(**TINYLLAMA)."""

TINYLLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                 num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                 max_position_embeddings=4096)
