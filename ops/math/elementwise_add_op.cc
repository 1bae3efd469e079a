// placeholder: elementwise_add
