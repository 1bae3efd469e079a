// placeholder: softmax
