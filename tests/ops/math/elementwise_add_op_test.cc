// placeholder: elementwise_add tests
