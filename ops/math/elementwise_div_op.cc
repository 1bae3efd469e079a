// placeholder: elementwise_div
