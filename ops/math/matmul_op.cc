// placeholder: matmul
