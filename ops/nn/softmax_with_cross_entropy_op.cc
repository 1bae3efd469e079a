// placeholder: softmax_with_cross_entropy
