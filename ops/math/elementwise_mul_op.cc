// placeholder: elementwise_mul
