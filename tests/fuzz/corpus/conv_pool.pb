
ÿÿÿÿÿÿÿÿÿÿ
img"ÿÿÿÿÿÿÿÿÿ8
filter"(0
conv"ÿÿÿÿÿÿÿÿÿ
act"ÿÿÿÿÿÿÿÿÿ
pool"ÿÿÿÿÿÿÿÿÿ
flat"ÿÿÿÿÿÿÿÿÿ 
prob"ÿÿÿÿÿÿÿÿÿ 
top"ÿÿÿÿÿÿÿÿÿ
top_idx"ÿÿÿÿÿÿÿÿÿ"z
conv2d
Inputimg
Filterfilter
Outputconv"
strides2
"
paddings2
"
	dilations2
"

groups"
relu	
Xconv

Outact"T
pool2d
Xact
Outpool"
pooling_type*max"
ksize2
"
strides2
"9
reshape	
Xpool
Outflat"
shape2
ÿÿÿÿÿÿÿÿÿ "!
softmax	
Xflat
Outprob"9
top_k	
Xprob

Outtop
Indicestop_idx"
k