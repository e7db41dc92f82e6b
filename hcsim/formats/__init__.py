"""File formats of other tools, read and written as functions: Chakra, AICB, ASTRA-sim, InfraGraph, GraphML."""
