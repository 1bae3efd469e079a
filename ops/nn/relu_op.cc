// placeholder: relu
