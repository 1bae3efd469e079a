// placeholder: sgd tests
