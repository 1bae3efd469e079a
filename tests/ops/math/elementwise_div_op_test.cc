// placeholder: elementwise_div tests
