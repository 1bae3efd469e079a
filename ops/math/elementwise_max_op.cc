// placeholder: elementwise_max
