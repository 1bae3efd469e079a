// placeholder: sgd
