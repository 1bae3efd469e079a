// placeholder: cross_entropy
