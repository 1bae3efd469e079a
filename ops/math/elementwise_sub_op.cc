// placeholder: elementwise_sub
