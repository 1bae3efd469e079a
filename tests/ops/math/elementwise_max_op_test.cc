// placeholder: elementwise_max tests
