
Z
data1Placeholder* 
_output_shapes
:
€À*
dtype0*
shape:
€À
>
abs_0Absdata1*
T0* 
_output_shapes
:
€À
@
relu_0Reluabs_0*
T0* 
_output_shapes
:
€À
?
exp_0Exprelu_0*
T0* 
_output_shapes
:
€À"ª