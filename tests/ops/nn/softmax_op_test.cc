// placeholder: softmax tests
