// placeholder: top_k tests
