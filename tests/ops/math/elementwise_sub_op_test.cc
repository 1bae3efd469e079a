// placeholder: elementwise_sub tests
