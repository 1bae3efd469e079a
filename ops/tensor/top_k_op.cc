// placeholder: top_k
