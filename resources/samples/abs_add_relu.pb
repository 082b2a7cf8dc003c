
Z
data1Placeholder* 
_output_shapes
:
€À*
dtype0*
shape:
€À
X
data2Placeholder*
_output_shapes
:	À*
dtype0*
shape:	À
>
abs_0Absdata1*
T0* 
_output_shapes
:
€À
G
add_0AddV2abs_0data2*
T0* 
_output_shapes
:
€À
@
relu_0Reluadd_0*
T0* 
_output_shapes
:
€À"ª