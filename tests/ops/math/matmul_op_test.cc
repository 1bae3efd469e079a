// placeholder: matmul tests
