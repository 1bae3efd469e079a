
?ÿÿÿÿÿÿÿÿÿ
x"
y""
relu
Xx
Outy
1
inner""
tanh
Xy
Outinner
4
other""
sigmoid
Xx
Outother
6
deep"" 
scale

Xinner
Outdeep