// placeholder: elementwise_mul tests
